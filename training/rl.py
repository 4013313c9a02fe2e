"""GRPO in the sandbox: sample a group of episodes per task, reward them by the judge, push up the good ones.

A run draws its cases once: ``tasks`` train tasks, a share ``perturbed`` of them with one
train-pool perturbation. Each step takes the next ``tasks_per_step`` cases (each epoch visits
every case once, so epochs' rewards compare like with like), runs ``group`` sampled episodes of
each through the batched :class:`~training.inference.model_agent.HFAgent` (multi-turn, real tool calls,
all episodes of the step in one batch), scores each episode with the reward, and normalises
rewards within each task's group (advantage = (r - mean) / (std + eps)). The loss is the clipped
policy-gradient objective of PPO on the tokens the agent generated, and on nothing else: each
turn is its own prompt (the rendered conversation, tool results included) plus its completion,
and only the completion is scored. The ratio is taken against the log-probabilities recorded at
sampling time; an optional KL term (k3 estimator) holds the policy near the initial one, which
with LoRA is the same model with its adapters switched off. An optional supervised term
(``sft_coef``, InstructGPT's PPO-ptx) adds the SFT loss on a batch of the gold episodes ``init``
was trained on to every step: a task the policy already solves gives a group of equal rewards and so
no gradient, and without the term nothing holds it while the others are learned.

Where the time goes: rollouts (token-by-token decoding) and then one forward and backward over
every turn. An episode's turns are usually one growing sequence (the next turn's prompt starts
with this turn's prompt and reply), so they are merged into one row; a group's rows share the
task's opening (system prompt, tool specs, query: most of the tokens), computed once per
micro-batch. Groups whose rewards are all equal carry no signal and are skipped.
"""

from __future__ import annotations

import dataclasses
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.seeds import child_seed
from training.rewards import get_reward, reward_name

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.episode import Episode


@dataclass
class RLConfig:
    """GRPO from a fine-tuned checkpoint on the sandbox's train split."""

    out: str = field(default="", metadata={"help": "output directory: the final model and checkpoints/ for resuming"})
    init: str = field(default="", metadata={"help": "the checkpoint to start from (an SFT output directory)"})
    domain: str = field(default="poi", metadata={"help": "the sandbox domain whose train split gives the tasks"})
    tasks: int = field(
        default=1000, metadata={"help": "distinct train tasks of the run; each epoch visits every one once"}
    )
    steps: int = field(default=20, metadata={"help": "RL steps (one rollout batch and one optimizer step each)"})
    group: int = field(default=8, metadata={"help": "G: sampled episodes per task, whose rewards are compared"})
    tasks_per_step: int = field(default=4, metadata={"help": "tasks per step; a step runs tasks_per_step × G episodes"})
    reward: str = field(
        default="completion",
        metadata={"help": "completion (success only), refusal-aware (also credits refusing the unsolvable), "
                  "or module:function"},
    )  # fmt: skip
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature of the rollouts"})
    top_k: int = field(default=0, metadata={"help": "sample among the k likeliest tokens (0: all)"})
    max_new_tokens: int = field(default=128, metadata={"help": "longest reply per turn, in tokens"})
    max_turns: int = field(
        default=6, metadata={"help": "cap on an episode's turns (a case's own budget if lower): loops cost the most"}
    )
    clip: float = field(default=0.2, metadata={"help": "PPO clip range ε of the probability ratio"})
    kl: float = field(default=0.0, metadata={"help": "weight β of the KL term to the initial policy (0: off)"})
    lr: float = field(default=2e-4, metadata={"help": "learning rate (LoRA); use about 1e-5 for a full fine-tune"})
    warmup: int = field(default=2, metadata={"help": "linear warm-up steps, then constant"})
    grad_clip: float = field(default=1.0, metadata={"help": "clip the gradient norm to this (0: off)"})
    lora: bool = field(default=True, metadata={"help": "train LoRA adapters (peft); False: full fine-tune"})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha"})
    micro_batch: int = field(default=4, metadata={"help": "rows per forward/backward pass (memory, not maths)"})
    perturbed: float = field(
        default=0.0,
        metadata={"help": "share of rollout tasks with a train-pool perturbation (perturbation-augmented RL)"},
    )
    sft_coef: float = field(
        default=0.0,
        metadata={"help": "weight γ of a supervised loss on --init's own SFT data in every step (InstructGPT's "
                  "PPO-ptx): holds the tasks the policy already solves, which give GRPO no signal (0: off)"},
    )  # fmt: skip
    sft_batch: int = field(default=8, metadata={"help": "gold episodes of that supervised loss per step"})
    families: list[str] = field(
        default_factory=lambda: ["error_feedback", "symbolic", "semantic"],
        metadata={"help": "perturbation families of the perturbed rollouts"},
    )
    bf16: bool = field(default=True, metadata={"help": "bf16 autocast in the update where the hardware supports it"})
    seed: int = field(default=0, metadata={"help": "seed of the task draw, the sampling and the LoRA init"})
    save_every: int = field(default=5, metadata={"help": "write a resumable checkpoint every N steps (0: end only)"})
    resume: bool = field(default=True, metadata={"help": "continue from the last intact checkpoint in OUT/checkpoints"})
    overwrite: bool = field(
        default=False, metadata={"help": "train again even if OUT holds a finished run, and replace it"}
    )
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar with reward and speed"})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Row:
    """One sequence to score: ``ids`` with the completions at ``spans`` (start, end), their sampling log-probs."""

    ids: list[int]
    spans: list[tuple[int, int]]
    old_logprobs: list[float]
    advantage: float


def group_advantages(rewards: Sequence[float], group: int, eps: float = 1e-4) -> list[float]:
    """Rewards normalised within each consecutive group of ``group``: (r - mean) / (std + eps)."""
    out: list[float] = []
    for start in range(0, len(rewards), group):
        chunk = rewards[start : start + group]
        mean = sum(chunk) / len(chunk)
        std = math.sqrt(sum((r - mean) ** 2 for r in chunk) / len(chunk))
        out.extend((r - mean) / (std + eps) if std > 0 else 0.0 for r in chunk)
    return out


def episode_rows(episode: Episode, advantage: float) -> list[Row]:
    """The episode's turns as rows: a turn whose prompt extends the row so far joins it, else it starts a new one."""
    rows: list[Row] = []
    for turn in episode.meta:
        prompt, completion = list(turn.get("prompt_ids", [])), list(turn.get("completion_ids", []))
        if not completion:
            continue
        row = rows[-1] if rows else None
        if row is None or prompt[: len(row.ids)] != row.ids:
            row = Row([], [], [], advantage)
            rows.append(row)
        start = len(prompt)
        row.ids = prompt + completion
        row.spans.append((start, start + len(completion)))
        row.old_logprobs.extend(turn["logprobs"])
    return rows


def scored_rows(episodes: Sequence[Episode], advantages: Sequence[float], kl: float) -> list[Row]:
    """The rows of the update. An episode whose advantage is 0 (its group's rewards were all equal) has no policy
    gradient, so it is left out, unless the KL term is on: then it is scored for the KL alone, so that the KL also
    acts on the tasks the policy already solves, which nothing else holds while the others are learned."""
    return [row for ep, a in zip(episodes, advantages, strict=True) if a != 0 or kl > 0 for row in episode_rows(ep, a)]


def row_logprobs(model: Any, rows: Sequence[Row], pad_id: int, temperature: float) -> Any:
    """Log-probabilities (1-D, in span order) of every row's completion tokens; the common prefix runs once."""
    import torch
    from transformers import DynamicCache

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    body = getattr(causal_lm, causal_lm.base_model_prefix)
    head = causal_lm.get_output_embeddings()
    device = head.weight.device
    # The shared prefix must stop before the position that predicts the first completion token.
    limit = min(r.spans[0][0] for r in rows) - 1
    first = rows[0].ids
    p = 0
    while p < limit and all(r.ids[p] == first[p] for r in rows[1:]):
        p += 1
    width = max(len(r.ids) for r in rows) - p
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    targets = torch.full((len(rows), width), -1, dtype=torch.long)  # the token position t predicts, if scored
    for i, r in enumerate(rows):
        input_ids[i, : len(r.ids) - p] = torch.tensor(r.ids[p:])
        for start, end in r.spans:
            targets[i, start - 1 - p : end - 1 - p] = torch.tensor(r.ids[start:end])
    input_ids, targets = input_ids.to(device), targets.to(device)
    cache = None
    if p:
        prefix = body(input_ids=torch.tensor([first[:p]], device=device), use_cache=True).cache
        cache = DynamicCache(
            ddp_cache_data=[
                (layer.keys.expand(len(rows), -1, -1, -1), layer.values.expand(len(rows), -1, -1, -1))
                for layer in prefix.layers
            ]
        )
    hidden = body(input_ids=input_ids, cache=cache, use_cache=cache is not None).last_hidden_state
    keep = targets >= 0
    logits = head(hidden[keep]).float()
    if temperature > 0:
        logits = logits / temperature
    return torch.log_softmax(logits, dim=-1).gather(1, targets[keep].unsqueeze(1)).squeeze(1)


def logprob_module(model: Any) -> Any:
    """The model wrapped so that its ``forward`` is :func:`row_logprobs`, or for a
    :class:`~training.data.Batch` of gold episodes the SFT loss: under ``accelerate launch`` (DDP) the
    computation then goes through one module's forward, as gradient synchronisation requires.
    Every process runs the same rollouts and rows (the same seeds), so the averaged gradient is exact."""
    import torch

    from training.data import Batch
    from training.sft import batch_loss

    class PolicyLogprobs(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, rows: Sequence[Row] | Batch, pad_id: int = 0, temperature: float = 1.0) -> Any:
            if isinstance(rows, Batch):
                return batch_loss(self.model, rows)
            return row_logprobs(self.model, rows, pad_id, temperature)

    return PolicyLogprobs(model)


def policy_loss(
    new: Any, old: Any, advantages: Any, clip: float, ref: Any | None = None, kl: float = 0.0
) -> tuple[Any, dict[str, float]]:
    """Per-token clipped surrogate (PPO) plus ``kl`` × the k3 KL estimate to ``ref``, summed (not averaged)."""
    import torch

    ratio = torch.exp(new - old)
    surrogate = torch.minimum(ratio * advantages, torch.clamp(ratio, 1 - clip, 1 + clip) * advantages)
    loss = -surrogate.sum()
    stats = {"clipped": float(((ratio - 1).abs() > clip).float().sum())}
    if ref is not None and kl > 0:
        log_r = ref - new
        k3 = torch.exp(log_r) - log_r - 1
        loss = loss + kl * k3.sum()
        stats["kl"] = float(k3.detach().sum())
    return loss, stats


def init_dir(cfg: RLConfig) -> Path:
    """The directory of the checkpoint ``cfg.init`` names (``hf:`` prefix and ``~`` allowed)."""
    return Path(cfg.init.removeprefix("hf:")).expanduser()


def load_policy(cfg: RLConfig) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, reference)``: the trainable policy from ``cfg.init``; the frozen initial
    policy for the KL term only for a full fine-tune with ``kl > 0`` (LoRA switches its adapters off)."""
    import copy

    from training.sft import load_model

    init = init_dir(cfg)
    if not (init / "config.json").is_file():
        from training.checkpoint import CheckpointError

        raise CheckpointError(f"--init {cfg.init!r}: no config.json there; give an SFT output directory")
    model, tokenizer = load_model(cfg, init)
    reference = None
    if not cfg.lora and cfg.kl > 0:
        reference = copy.deepcopy(model).eval().requires_grad_(False)
    return model, tokenizer, reference


def run_cases(cfg: RLConfig, perturbations: list[str]) -> list[Case]:
    """The run's cases: ``cfg.tasks`` train tasks, a share ``cfg.perturbed`` of them with one train-pool
    perturbation each, drawn once by ``cfg.seed``."""
    from sandbox import tasks
    from sandbox.case import Case

    pool = tasks(cfg.domain, "train", cfg.tasks, cfg.seed)
    if cfg.perturbed <= 0:
        return [Case(t) for t in pool]
    from training.paft import paft_cases

    return paft_cases(pool, cfg.perturbed, perturbations, child_seed(cfg.seed, "rl-perturb"))


def sft_term_data(cfg: RLConfig, tokenizer: Any) -> tuple[list[Any], list[list[int]]]:
    """The gold examples of the supervised term, the SFT data ``cfg.init`` was trained on (its config is read from
    its metadata), and each step's batch of them."""
    import json

    from training.config import SFTConfig
    from training.data import plan_batches
    from training.paft import build_examples
    from training.sft import META_FILE

    path = init_dir(cfg) / META_FILE
    meta = json.loads(path.read_text()) if path.is_file() else {}
    if meta.get("kind") not in ("sft", "paft"):
        found = f"kind {meta.get('kind')!r}" if meta else "no such file"
        from sandbox.errors import UsageError

        raise UsageError(
            f"RLConfig.sft_coef={cfg.sft_coef}: the supervised term trains on the SFT data of --init, described in "
            f"{path}; found {found}. Start from an `openagent train sft` output, or set sft_coef to 0."
        )
    names = {f.name for f in dataclasses.fields(SFTConfig)}
    sft_cfg = SFTConfig(**{k: v for k, v in meta["config"].items() if k in names})
    examples, _ = build_examples(sft_cfg, tokenizer)
    return examples, plan_batches(examples, cfg.sft_batch, cfg.steps, child_seed(cfg.seed, "sft-term"))


def step_cases(cfg: RLConfig, cases: Sequence[Case], step: int) -> list[Case]:
    """The step's cases. Each epoch visits every case of the run once, in an order drawn by ``(seed, epoch)``,
    so one epoch's reward against the next compares the same cases, and a resumed run sees the same ones."""
    per = min(cfg.tasks_per_step, len(cases))
    orders: dict[int, list[int]] = {}
    picked = []
    for position in range(step * per, (step + 1) * per):
        epoch, i = divmod(position, len(cases))
        if epoch not in orders:
            orders[epoch] = list(range(len(cases)))
            random.Random(child_seed(cfg.seed, "rl", epoch)).shuffle(orders[epoch])
        picked.append(cases[orders[epoch][i]])
    return picked


def epoch_of(cfg: RLConfig, n_cases: int, step: int) -> int:
    """The epoch (0-based) that step ``step`` (0-based) starts in."""
    return step * min(cfg.tasks_per_step, n_cases) // n_cases


def rollout(
    model: Any, tokenizer: Any, cases: Sequence[Case], cfg: RLConfig, step: int
) -> tuple[list[Episode], dict[str, Any]]:
    """``group`` sampled episodes of each case, all in one lockstep batch; the agent's stats."""
    from sandbox.episode import run_episodes
    from training.inference.model_agent import HFAgent

    generator_model = model.get_base_model() if hasattr(model, "get_base_model") else model
    agent = HFAgent(
        model=generator_model, tokenizer=tokenizer, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
        top_k=cfg.top_k, seed=child_seed(cfg.seed, "rollout", step), name="rl-policy",
    )  # fmt: skip
    envs = [case.env() for case in cases for _ in range(cfg.group)]
    max_steps = min(cfg.max_turns, max(case.max_steps for case in cases))
    was_training = model.training
    model.eval()
    # Decoding runs one token at a time, where LoRA's extra small matmuls cost more than their
    # FLOPs: merge the adapters into the weights for the rollout (unmerging is exact to fp32 rounding).
    merge = hasattr(model, "merge_adapter")
    if merge:
        model.merge_adapter()
    try:
        episodes = run_episodes(agent, envs, max_steps)
    finally:
        if merge:
            model.unmerge_adapter()
        model.train(was_training)
    return episodes, dict(agent.stats)


def train(cfg: RLConfig, reward: Callable[[Episode], float] | None = None) -> Path:
    """GRPO from ``cfg.init`` into ``cfg.out``; ``reward`` overrides ``cfg.reward``.

    A finished run of the same options (the reward included) in ``cfg.out`` is reused, one of other options
    refused unless ``cfg.overwrite``; an unfinished one resumes from its newest intact checkpoint."""
    from training import runs

    check_config(cfg)
    reward_fn = get_reward(reward if reward is not None else cfg.reward)
    out = Path(cfg.out)
    # The reward that is used, not the name in the config, decides whether a run can be reused or resumed.
    config = {**cfg.to_dict(), "reward": reward_name(reward if reward is not None else cfg.reward)}
    if runs.reuse_finished(out, config, cfg.overwrite):
        return out
    point = runs.resume_point(out, config, cfg.overwrite) if cfg.resume else None

    import torch
    from accelerate import Accelerator

    from training.data import collate
    from training.sft import _bf16_ok, export

    out.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    model, tokenizer, reference = load_policy(cfg)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    perturbations: list[str] = []
    if cfg.perturbed > 0:
        from training.paft import train_perturbations

        perturbations = train_perturbations(cfg.families)
    pool = run_cases(cfg, perturbations)
    gold, gold_plan = sft_term_data(cfg, tokenizer) if cfg.sft_coef > 0 else ([], [])

    bf16 = cfg.bf16 and _bf16_ok()
    accelerator = Accelerator(mixed_precision="bf16" if bf16 else "no", cpu=not torch.cuda.is_available())
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0, betas=(0.9, 0.99))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(1, cfg.warmup)))
    scorer, optimizer = accelerator.prepare(logprob_module(model), optimizer)
    policy = model  # the bare model (moved to the device by prepare): rollouts, KL, checkpoints, export
    if reference is not None:
        reference.to(accelerator.device)

    start, history = 0, []
    if point is not None:
        start, history = runs.restore(point, policy, optimizer, scheduler), point.history
        if accelerator.is_main_process:  # stderr: stdout carries only OUT, for scripts
            print(f"openagent train rl: resuming from {point.path} (step {start} of {cfg.steps})", file=sys.stderr)
        del point
    elif accelerator.is_main_process:
        runs.clear_checkpoints(out)  # a fresh start: an older run's checkpoints must not outrank its own
    meta = {
        "kind": "rl", "algorithm": "grpo", "init": str(cfg.init), "base": str(cfg.init), "reward": reward_name(
            reward if reward is not None else cfg.reward), "config": config, "bf16": bf16, "seed": cfg.seed,
        "data": {"domain": cfg.domain, "split": "train", "tasks": len(pool), "perturbed": cfg.perturbed,
                 "perturbed_cases": sum(bool(c.perturbations) for c in pool), "pool": "train",
                 "candidates": perturbations},
    }  # fmt: skip
    bar = _progress(cfg, accelerator, start)
    scorer.train()
    t_start = time.perf_counter()
    for step in range(start, cfg.steps):
        t0 = time.perf_counter()
        cases = step_cases(cfg, pool, step)
        episodes, agent_stats = rollout(policy, tokenizer, cases, cfg, step)
        t_rollout = time.perf_counter() - t0
        rewards = [float(reward_fn(ep)) for ep in episodes]
        advantages = group_advantages(rewards, cfg.group)
        rows = scored_rows(episodes, advantages, cfg.kl)

        # One optimizer step over all rows (the loss is a mean over the step's scored tokens) and the gold batch.
        n_tokens = sum(len(r.old_logprobs) for r in rows)
        totals = Counter()
        for i in range(0, len(rows), cfg.micro_batch):
            chunk = rows[i : i + cfg.micro_batch]
            old = torch.tensor([lp for r in chunk for lp in r.old_logprobs], device=accelerator.device)
            adv = torch.tensor([r.advantage for r in chunk for _ in r.old_logprobs], device=accelerator.device)
            ref = None
            if cfg.kl > 0:
                with torch.no_grad(), accelerator.autocast():
                    if reference is not None:
                        ref = row_logprobs(reference, chunk, pad_id, cfg.temperature)
                    else:
                        with policy.disable_adapter():
                            ref = row_logprobs(policy, chunk, pad_id, cfg.temperature)
            with accelerator.autocast():
                new = scorer(chunk, pad_id, cfg.temperature)
                loss, stats = policy_loss(new, old, adv, cfg.clip, ref, cfg.kl)
            accelerator.backward(loss / n_tokens)
            totals.update(stats)
            totals["loss"] += float(loss.detach())
        if gold:
            batch = collate([gold[i] for i in gold_plan[step]]).to(accelerator.device)
            with accelerator.autocast():
                sft_loss = scorer(batch)
            accelerator.backward(cfg.sft_coef * sft_loss)
            totals["sft_loss"] = float(sft_loss.detach())
        if rows or gold:
            if cfg.grad_clip:
                accelerator.clip_grad_norm_(params, cfg.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()

        t_step = time.perf_counter() - t0
        epoch = epoch_of(cfg, len(pool), step) + 1
        record = _step_record(
            step + 1, epoch, episodes, rewards, cfg.group, rows, n_tokens, totals, t_rollout, t_step, agent_stats
        )
        history.append(record)
        if bar is not None:
            bar.set_postfix(
                reward=f"{record['reward']:.3f}", ep_s=f"{record['episodes_per_s']:.2f}", s_step=f"{t_step:.0f}"
            )
            bar.update(1)
        done = step + 1
        if cfg.save_every and done % cfg.save_every == 0 and done != cfg.steps and accelerator.is_main_process:
            runs.save_checkpoint(out, done, policy, optimizer, scheduler, history, config)
    if bar is not None:
        bar.close()

    elapsed = time.perf_counter() - t_start
    meta.update(steps=cfg.steps, history=history, train_seconds=round(elapsed, 1))
    if accelerator.is_main_process:
        export(policy, tokenizer, out, meta)
        runs.clear_checkpoints(out)
    return out


def check_config(cfg: RLConfig) -> None:
    """Raise :class:`~sandbox.errors.UsageError` on options no run can train with."""
    from sandbox.errors import UsageError

    if not cfg.out:
        raise UsageError("RLConfig.out: an output directory is required")
    if not cfg.init:
        raise UsageError("RLConfig.init: the checkpoint to start from is required (an SFT output directory)")
    problems = [
        f"{name} must be at least {low}, got {value}"
        for name, value, low in (("steps", cfg.steps, 1), ("tasks", cfg.tasks, 1),
                                 ("tasks_per_step", cfg.tasks_per_step, 1), ("max_new_tokens", cfg.max_new_tokens, 1),
                                 ("micro_batch", cfg.micro_batch, 1), ("save_every", cfg.save_every, 0),
                                 ("max_turns", cfg.max_turns, 1))
        if value < low
    ]  # fmt: skip
    if cfg.group < 2:
        problems.append(f"group must be at least 2 (GRPO compares episodes within a group), got {cfg.group}")
    if not cfg.lr > 0:
        problems.append(f"lr must be positive, got {cfg.lr}")
    if cfg.temperature < 0 or cfg.clip <= 0 or cfg.kl < 0 or cfg.sft_coef < 0:
        problems.append(
            f"temperature, kl and sft_coef must not be negative and clip must be positive (got temperature="
            f"{cfg.temperature}, clip={cfg.clip}, kl={cfg.kl}, sft_coef={cfg.sft_coef})"
        )
    if not 0 <= cfg.perturbed <= 1:
        problems.append(f"perturbed must be in [0, 1], got {cfg.perturbed}")
    if problems:
        raise UsageError(f"RLConfig: {'; '.join(problems)}")


def _step_record(
    step: int, epoch: int, episodes: list[Episode], rewards: list[float], group: int, rows: list[Row], n_tokens: int,
    totals: Counter, t_rollout: float, t_step: float, agent_stats: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    unsolvable = [ep for ep in episodes if not ep.solvable]
    groups = [rewards[g : g + group] for g in range(0, len(rewards), group)]
    return {
        "step": step,
        "epoch": epoch,
        "reward": round(sum(rewards) / len(rewards), 4),
        "rewards": [round(r, 4) for r in rewards],
        "groups": len(groups),
        "signal_groups": sum(len(set(g)) > 1 for g in groups),  # the groups whose rewards differ: GRPO's only signal
        "success": round(sum(ep.outcome == "success" for ep in episodes) / len(episodes), 4),
        "refusal_rate": round(sum(ep.outcome == "refused" for ep in unsolvable) / len(unsolvable), 4)
        if unsolvable else None,
        "outcomes": dict(Counter(ep.outcome for ep in episodes)),
        "rows": len(rows),
        "scored_tokens": n_tokens,
        "loss": round(totals["loss"] / n_tokens, 5) if n_tokens else 0.0,
        "clip_frac": round(totals["clipped"] / n_tokens, 4) if n_tokens else 0.0,
        **({"kl": round(totals["kl"] / n_tokens, 5)} if "kl" in totals and n_tokens else {}),
        **({"sft_loss": round(totals["sft_loss"], 5)} if "sft_loss" in totals else {}),
        "generated_tokens": agent_stats.get("generated", 0),
        "rollout_s": round(t_rollout, 2),
        "episodes_per_s": round(len(episodes) / t_rollout, 3) if t_rollout else 0.0,
        "step_s": round(t_step, 2),
    }  # fmt: skip


def _progress(cfg: RLConfig, accelerator: Any, start: int) -> Any:
    if not cfg.progress or not accelerator.is_main_process:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=cfg.steps, initial=start, desc="openagent train rl", unit="step", file=sys.stderr)
