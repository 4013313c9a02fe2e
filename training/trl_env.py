"""The perturbed world as an environment for TRL's ``GRPOTrainer``: train-pool cases in, the judge's outcome out.

Two ways in, as TRL offers them (docs/training-at-scale.md says when to use which):

- :func:`case_environments`, for ``environment_factory``: one environment class per case whose public methods
  are the case's perturbed tools (renamed, re-described, decoys...), its schema rebuilt from a signature and a
  Google docstring, which TRL turns back into the tool list and dispatches by name. Its tools are fixed per
  class, so it carries a static surface only: a case whose tool list drifts mid-episode, whose task has
  several user turns, or whose schema a signature cannot say exactly is refused, with the reason.
- :class:`SandboxRollouts`, for ``rollout_func``: our batched generation plays whole episodes through the
  sandbox's own loop (the chat template renders the case's exact tool specs each turn, a drift's new list and
  notice included), and hands TRL each episode as one token sequence with the tool results masked out.

Both score with :func:`judge_reward`: the judge's outcome through a reward of ``openagent train rl``
(``completion``, ``refusal-aware`` or a callable). The model sees the opening messages, the perturbed tools and
each call's observation; the task, its gold plan and its answer stay in the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sandbox.errors import UsageError
from sandbox.proxy.case_session import CaseSession, check_train_cases
from sandbox.seeds import child_seed
from training.rewards import get_reward

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.episode import Episode

CASE_KEY = "case"
"""The column (and the key on each prompt's last message) that names the case a row plays, by index."""


def dataset_rows(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """One row per case for ``train_dataset``: its opening messages as the prompt, its index, and the environment
    it selects (``environment_factory`` as a dict). A rollout function reads the index off the last message."""
    rows = []
    for i, case in enumerate(check_train_cases(cases)):
        opening = CaseSession(case).opening
        prompt = [{**m, CASE_KEY: None} for m in opening[:-1]] + [{**opening[-1], CASE_KEY: str(i)}]
        rows.append({"prompt": prompt, CASE_KEY: str(i), "environment": str(i)})
    return rows


def judge_reward(reward: str | Callable[[Episode], float] = "completion") -> Callable[..., list[float]]:
    """A TRL reward function: each rollout's judged episode through ``reward``. It reads the ``episode`` column
    (:class:`SandboxRollouts`) or, with ``environment_factory``, ends each environment's episode with the
    completion's final text and judges that."""
    score = get_reward(reward)

    def judged(completions: list[Any], episode: list[Episode] | None = None, environments: list[Any] | None = None,
               **_: Any) -> list[float]:  # fmt: skip
        if episode is None:
            if environments is None:
                raise UsageError("judge_reward: no episodes; use it with SandboxRollouts or case_environments")
            from training.trl_tools import finish

            episode = [finish(env, _final_text(c)) for env, c in zip(environments, completions, strict=True)]
        return [float(score(e)) for e in episode]

    judged.__name__ = f"judge_{getattr(score, '__name__', 'reward')}"
    return judged


def _final_text(completion: Any) -> str:
    """The text of a completion's last assistant message (conversational) or the completion itself."""
    if isinstance(completion, str):
        return completion
    said = [m for m in completion if m.get("role") == "assistant" and not m.get("tool_calls")]
    return str(said[-1].get("content") or "") if said else ""


class SandboxRollouts:
    """A ``rollout_func``: ``trainer.num_generations`` episodes of each prompt's case, played by the trainer's
    model through :class:`~training.inference.model_agent.HFAgent` (all of a step's episodes in one lockstep
    batch), returned as TRL wants them. Each episode is one sequence: the first turn's prompt, then every turn's
    reply (scored) and what the sandbox put between them (tool results, masked out by ``env_mask``). Where a
    turn's rendered prompt does not extend the sequence so far (a template that re-renders a reply differently),
    the sequence stops before that turn: its reward still counts the whole episode."""

    def __init__(self, cases: Sequence[Case], max_new_tokens: int = 128, temperature: float = 0.8, top_k: int = 0,
                 max_turns: int = 6, seed: int = 0) -> None:  # fmt: skip
        self.cases = check_train_cases(cases)
        self.max_new_tokens, self.temperature, self.top_k = max_new_tokens, temperature, top_k
        self.max_turns, self.seed = max_turns, seed
        self.calls = 0
        self.stats: dict[str, float] = {"episodes": 0, "cut_sequences": 0, "generated": 0}

    def cases_of(self, prompts: Sequence[Any]) -> list[Case]:
        try:
            return [self.cases[int(p[-1][CASE_KEY])] for p in prompts]
        except (KeyError, TypeError, ValueError, IndexError):
            raise UsageError(
                "SandboxRollouts: a prompt names no case of this run; build train_dataset with dataset_rows(cases)"
            ) from None

    def episodes(self, model: Any, tokenizer: Any, cases: Sequence[Case]) -> tuple[list[Episode], dict[str, Any]]:
        """One sampled episode per case, in one batch."""
        from sandbox.episode import run_episodes
        from training.inference.model_agent import HFAgent

        self.calls += 1
        generator = model.get_base_model() if hasattr(model, "get_base_model") else model
        agent = HFAgent(model=generator, tokenizer=tokenizer, max_new_tokens=self.max_new_tokens,
                        temperature=self.temperature, top_k=self.top_k,
                        seed=child_seed(self.seed, "trl-rollout", self.calls), name="trl-policy")  # fmt: skip
        was_training = model.training
        model.eval()
        # LoRA's small matmuls cost more than their FLOPs in token-by-token decoding: generate with the adapters
        # merged into the weights, as our own loop does (unmerging is exact to fp32 rounding)
        merge = hasattr(model, "merge_adapter")
        if merge:
            model.merge_adapter()
        try:
            episodes = run_episodes(agent, [c.env() for c in cases], [min(self.max_turns, c.max_steps) for c in cases])
        finally:
            if merge:
                model.unmerge_adapter()
            model.train(was_training)
        return episodes, dict(agent.stats)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        episodes, stats = self.episodes(model, trainer.processing_class, self.cases_of(prompts))
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                     "episode": episodes}  # fmt: skip
        for episode in episodes:
            prompt, completion, logprobs, mask, cut = episode_sequence(episode, trainer.processing_class)
            out["prompt_ids"].append(prompt)
            out["completion_ids"].append(completion)
            out["logprobs"].append(logprobs)
            out["env_mask"].append(mask)
            self.stats["cut_sequences"] += cut
        self.stats["episodes"] += len(episodes)
        self.stats["generated"] += stats.get("generated", 0)
        return out


def episode_sequence(episode: Episode, tokenizer: Any) -> tuple[list[int], list[int], list[float], list[int], bool]:
    """``(prompt_ids, completion_ids, logprobs, env_mask, cut)`` of an episode's turns as one sequence (see
    :class:`SandboxRollouts`); an episode that generated nothing gets the end-of-turn token, masked out."""
    turns = [t for t in episode.meta if t.get("completion_ids")]
    if not turns:
        prompt = list(episode.meta[0]["prompt_ids"]) if episode.meta and "prompt_ids" in episode.meta[0] else []
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        return prompt or [eos], [eos], [0.0], [0], False
    prompt = list(turns[0]["prompt_ids"])
    sequence = list(prompt)
    completion: list[int] = []
    logprobs: list[float] = []
    mask: list[int] = []
    cut = False
    for turn in turns:
        ids = list(turn["prompt_ids"])
        if ids[: len(sequence)] != sequence:
            cut = True
            break
        between = ids[len(sequence) :]
        reply = list(turn["completion_ids"])
        completion += between + reply
        logprobs += [0.0] * len(between) + list(turn["logprobs"])
        mask += [0] * len(between) + [1] * len(reply)
        sequence = ids + reply
    return prompt, completion, logprobs, mask, cut


def case_environments(cases: Sequence[Case], max_steps: int | None = None) -> dict[str, Callable[[], Any]]:
    """``environment_factory`` as a dict: one environment class per case (by its index, as :func:`dataset_rows`
    names it), its methods the case's tools as perturbed. :class:`UsageError` for a case it cannot carry."""
    from training.trl_tools import environment_class

    return {str(i): environment_class(case, max_steps) for i, case in enumerate(check_train_cases(cases))}


def grpo_trainer(model: Any, cases: Sequence[Case], args: Any, *, reward: str | Callable = "completion",
                 mode: str = "rollout", tokenizer: Any = None, **kwargs: Any) -> Any:  # fmt: skip
    """A ``GRPOTrainer`` on ``cases`` (train split, train pool): ``mode="rollout"`` plays them through
    :class:`SandboxRollouts` (any case), ``"environment"`` through :func:`case_environments` (static tool surfaces);
    the judge's outcome is the reward. ``kwargs`` go to :class:`SandboxRollouts` (rollout mode)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    if mode not in ("rollout", "environment"):
        raise UsageError(f"mode must be 'rollout' or 'environment', got {mode!r}")
    rows = dataset_rows(cases)
    common = {"model": model, "reward_funcs": [judge_reward(reward)], "args": args, "processing_class": tokenizer}
    if mode == "rollout":
        rollouts = SandboxRollouts(cases, **kwargs)
        return GRPOTrainer(**common, train_dataset=Dataset.from_list(rows), rollout_func=rollouts)
    from training.trl_tools import with_response_template

    common["processing_class"] = with_response_template(tokenizer)
    return GRPOTrainer(**common, train_dataset=Dataset.from_list(rows), environment_factory=case_environments(cases))


__all__ = ["SandboxRollouts", "case_environments", "dataset_rows", "episode_sequence", "grpo_trainer", "judge_reward"]
