"""``HFAgent``: a Hugging Face causal LM as a sandbox agent, batched, with a KV cache kept per episode.

Each turn it renders the episode's whole conversation with the checkpoint's chat template (tools
included), so what the model sees is exactly what the template says; only the tokens that the
episode's cache does not already hold are run through the model (the new tool results and the
generation prompt), and the reply is the generated text, tool-call blocks and all, for the
sandbox's parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox.agent import Reply, Turn
from sandbox.errors import UsageError
from training.inference.generation import BatchGenerator, KVState, Sampling


class HFAgent:
    """A local causal-LM checkpoint (``hf:PATH``; ``hf:default`` is the default base) as an agent.

    Greedy by default; ``temperature > 0`` samples, each episode's turn from its own generator
    seeded by ``(seed, episode id, turn number)``, so results do not depend on batch composition.
    ``Reply.meta`` holds ``prompt_ids``, ``completion_ids`` (with the end-of-turn token when there
    is one), ``logprobs`` (one per completion id), ``finish_reason``, ``prefilled`` and ``reused``.
    """

    def __init__(
        self,
        path: str | Path = "default",
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
        dtype: str = "auto",
        device: str | None = None,
        trust_remote_code: bool = False,
        cache_across_turns: bool = True,
        share_prefixes: bool = True,
        model: Any = None,
        tokenizer: Any = None,
        name: str | None = None,
    ):
        from training.inference import model_dir

        if model is None:
            model, tokenizer, directory = model_dir.load(path, dtype, device, trust_remote_code)
            self.directory: Path | None = directory
            self.name = name or f"hf:{directory}"
        else:
            if tokenizer is None:
                raise UsageError("HFAgent(model=...) needs its tokenizer too")
            self.directory = None
            self.name = name or f"model:{type(model).__name__}"
        self.model, self.tokenizer = model, tokenizer
        self.sampling = Sampling(max_new_tokens, temperature, top_k, top_p, seed)
        self.cache_across_turns = cache_across_turns
        self.share_prefixes = share_prefixes
        self.generator = BatchGenerator(model, _eos_ids(model, tokenizer), _pad_id(model, tokenizer))
        self._states: dict[str, KVState] = {}
        self._turns: dict[str, int] = {}
        self._prefix: KVState | None = None
        self.stats = {
            "turns": 0,
            "prefilled": 0,
            "reused": 0,
            "generated": 0,
            "prefill_s": 0.0,
            "decode_s": 0.0,
            "decode_steps": 0,
        }

    def render(self, turn: Turn) -> list[int]:
        """The token ids the model sees for this turn: the whole conversation and the generation prompt."""
        text = self.tokenizer.apply_chat_template(
            turn.messages, tools=turn.tools or None, add_generation_prompt=True, tokenize=False
        )
        # The template writes the special tokens itself.
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        prompts = [self.render(turn) for turn in turns]
        ids = [turn.episode_id for turn in turns]
        # Taken out of the dict: the generator frees each old cache once it has copied it.
        states = [self._states.pop(e, None) if self.cache_across_turns else None for e in ids]
        fresh = [k for k, state in enumerate(states) if state is None]
        keys = [f"{e}:{self._turns.get(e, 0)}" for e in ids]
        shared = [self._prefix] if self._prefix is not None else []
        completions, new_states = self.generator.generate(
            prompts, states, self.sampling, keys, self.share_prefixes, shared
        )
        for key, value in self.generator.timings.items():
            self.stats[key] += value
        if self.share_prefixes and fresh:
            # Keep the first new episode's prompt (system prompt, tool specs, query) for the next
            # episodes, even those that come one at a time.
            self._prefix = new_states[fresh[0]].prefix(len(prompts[fresh[0]]))
        replies = []
        for episode_id, prompt, done, state in zip(ids, prompts, completions, new_states, strict=True):
            self._turns[episode_id] = self._turns.get(episode_id, 0) + 1
            if self.cache_across_turns:
                self._states[episode_id] = state
            text_ids = done.token_ids[:-1] if done.finish_reason == "stop" else done.token_ids
            text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
            meta = {
                "prompt_ids": prompt,
                "completion_ids": done.token_ids,
                "logprobs": done.logprobs,
                "finish_reason": done.finish_reason,
                "prefilled": done.prefilled,
                "reused": done.reused,
            }
            replies.append(Reply(text=text, meta=meta))
            self.stats["turns"] += 1
            self.stats["prefilled"] += done.prefilled
            self.stats["reused"] += done.reused
            self.stats["generated"] += len(done.token_ids)
        return replies

    def close(self, episode_ids: Sequence[str]) -> None:
        """Forget finished episodes and free their caches."""
        for episode_id in episode_ids:
            self._states.pop(episode_id, None)
            self._turns.pop(episode_id, None)

    def reset(self) -> None:
        """Drop every episode's cache (after the weights change, say)."""
        self._prefix = None
        self._states.clear()
        self._turns.clear()

    def cache_bytes(self) -> int:
        return sum(state.nbytes() for state in self._states.values())

    def fingerprint(self) -> str:
        """``hf:PATH|WEIGHTS|dtype|sampling``: WEIGHTS digests the bytes of the checkpoint's weight,
        config, tokenizer and adapter files (``sandbox.fingerprint.checkpoint_digest``, memoised per
        file version). Read when first asked, before the first episode, and kept: the key stays that
        of the weights this agent loaded even if the directory is rewritten while it runs."""
        from sandbox.fingerprint import checkpoint_digest

        s = self.sampling
        weights = vars(self).get("_checkpoint_digest")
        if weights is None:
            weights = checkpoint_digest(self.directory) if self.directory else "in-memory"
            self._checkpoint_digest = weights
        parts = [
            self.name,
            weights,
            str(self.generator.dtype).removeprefix("torch."),
            f"max_new={s.max_new_tokens}",
        ]
        if s.temperature > 0:
            parts.append(f"T={s.temperature},top_k={s.top_k},top_p={s.top_p},seed={s.seed}")
        else:
            parts.append("greedy")
        return "|".join(parts)


def load_agent(path: str | Path = "default", **kwargs: Any) -> HFAgent:
    """The agent for ``hf:PATH`` (``path`` without the ``hf:``; ``default`` is the default base).
    Raises a ``ValueError`` (``CheckpointError``, ``BaseModelUnavailable``) that says what to fix."""
    return HFAgent(path, **kwargs)


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """End-of-turn tokens: the generation config's and the tokenizer's end-of-sequence."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(t) for t in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    if not ids:
        raise UsageError("the model has no end-of-sequence token (generation_config.eos_token_id, tokenizer.eos_token)")
    return sorted(ids)


def _pad_id(model: Any, tokenizer: Any) -> int:
    for candidate in (
        tokenizer.pad_token_id,
        tokenizer.eos_token_id,
        getattr(model.config, "pad_token_id", None),
    ):
        if candidate is not None:
            return int(candidate)
    return 0
