"""GRPO in the sandbox: sample a group of episodes per task, reward them by the judge, push up the good ones.

Each step plays ``group`` sampled episodes of each of its cases (``training.rollouts``), scores each
episode with the reward, normalises rewards within each task's group (advantage = (r - mean) / (std +
eps)) and takes one optimizer step on PPO's clipped objective over the tokens the agent generated
(``training.grpo``). An optional supervised term (``sft_coef``, InstructGPT's PPO-ptx) adds the SFT loss
on a batch of the gold episodes ``init`` was trained on to every step: a task the policy already solves
gives a group of equal rewards and so no gradient, and without the term nothing holds it while the
others are learned.

Where the time goes: rollouts (token-by-token decoding), then one forward and backward over every turn.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.seeds import child_seed
from training import cpu, grpo, runs
from training.config import RLConfig
from training.loop import Loop, begin, load_model
from training.rewards import get_reward, reward_name
from training.rl_common import ENGINES, check_config, init_dir, rl_perturbations, run_meta
from training.rollouts import epoch_of, rollout, run_cases, step_indices

if TYPE_CHECKING:
    from sandbox.episode import Episode

__all__ = ["ENGINES", "RLConfig", "check_config", "load_policy", "train"]


def train(cfg: RLConfig, reward: Callable[[Episode], float] | None = None) -> Path:
    """GRPO from ``cfg.init`` into ``cfg.out``; ``reward`` overrides ``cfg.reward``.

    A finished run of the same options (the reward included) in ``cfg.out`` is reused, one of other options
    refused unless ``cfg.overwrite``; an unfinished one resumes from its newest intact checkpoint. ``cfg.engine="trl"``
    trains the same run through TRL's ``GRPOTrainer`` (:mod:`training.rl_trl`)."""
    check_config(cfg)
    if cfg.engine == "trl":
        from training.rl_trl import train_trl

        return train_trl(cfg, reward)
    cpu.prepare()  # before torch loads: OpenMP reads its wait policy once
    chosen = reward if reward is not None else cfg.reward
    reward_fn = get_reward(chosen)
    out = Path(cfg.out)
    # The reward that is used, not the name in the config, decides whether a run can be reused or resumed.
    config = {**cfg.to_dict(), "reward": reward_name(chosen)}
    if runs.reuse_finished(out, config, cfg.overwrite):
        return out
    point = runs.resume_point(out, config, cfg.overwrite) if cfg.resume else None

    # The policy, the run's cases, the supervised term's data, the optimizer.
    begin(cfg)
    policy, tokenizer, reference = load_policy(cfg)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    perturbations = rl_perturbations(cfg)
    pool = run_cases(cfg, perturbations)
    gold, gold_plan = sft_term_data(cfg, tokenizer) if cfg.sft_coef > 0 else ([], [])
    schedule = lambda s: min(1.0, (s + 1) / max(1, cfg.warmup))  # linear warm-up, then constant
    loop = Loop.prepare(cfg, policy, grpo.logprob_module(policy), schedule, (0.9, 0.99), 0.0, point)
    if reference is not None:
        reference.to(loop.accelerator.device)
    start, history = loop.resume(point, policy, "openagent train rl")
    del point  # the checkpoint's tensors, now in the policy and optimizer
    meta = run_meta(cfg, config, loop.bf16, pool, perturbations)

    # The loop: play the step's cases, reward and score the episodes, one optimizer step.
    bar = loop.progress_bar(start, "openagent train rl")
    loop.module.train()
    t_start = time.perf_counter()
    for step in range(start, cfg.steps):
        t0 = time.perf_counter()
        cases = step_indices(cfg, len(pool), step)
        episodes, agent_stats = rollout(policy, tokenizer, [pool[i] for i in cases], cfg, step)
        t_rollout = time.perf_counter() - t0
        rewards = [float(reward_fn(ep)) for ep in episodes]
        rows = grpo.scored_rows(episodes, grpo.group_advantages(rewards, cfg.group), cfg.kl)
        totals: Counter = Counter()
        for _ in range(cfg.iterations):  # μ: optimizer steps on the same rollouts, the ratio clipped past the first
            totals.update(grpo.backward(loop, policy, reference, rows, pad_id, cfg))
            if gold:
                totals["sft_loss"] += sft_term_backward(loop, gold, gold_plan[step], cfg.sft_coef)  # type: ignore[assignment]  # a Counter sums floats; typeshed says int
            if rows or gold:
                loop.optimizer_step()

        done, t_step = step + 1, time.perf_counter() - t0
        seconds = {"rollout": t_rollout, "step": t_step}
        epoch = epoch_of(cfg, len(pool), step) + 1
        history.append(
            step_record(
                done, epoch, cases, episodes, rewards, cfg.group, rows, totals, seconds, agent_stats, cfg.iterations
            )
        )
        if bar is not None:
            last = history[-1]
            bar.set_postfix(
                reward=f"{last['reward']:.3f}", ep_s=f"{last['episodes_per_s']:.2f}", s_step=f"{t_step:.0f}"
            )
            bar.update(1)
        loop.checkpoint(done, policy, history, config)
    if bar is not None:
        bar.close()

    meta.update(steps=cfg.steps, history=history, train_seconds=round(time.perf_counter() - t_start, 1))
    return loop.finish(policy, tokenizer, meta)


def sft_term_backward(loop: Loop, gold: list[Any], batch: list[int], coef: float) -> float:
    """The supervised term's backward pass on the step's ``batch`` of ``gold`` examples; its loss."""
    from training.batches import collate

    rows = collate([gold[i] for i in batch]).to(loop.accelerator.device)
    with loop.accelerator.autocast():
        loss = loop.module(rows)
    loop.accelerator.backward(coef * loss)
    return float(loss.detach())


def load_policy(cfg: RLConfig) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, reference)``: the trainable policy from ``cfg.init``; the frozen initial
    policy for the KL term only for a full fine-tune with ``kl > 0`` (LoRA switches its adapters off)."""
    init = init_dir(cfg)
    model, tokenizer = load_model(cfg, init)
    reference = None
    if not cfg.lora and cfg.kl > 0:
        reference = copy.deepcopy(model).eval().requires_grad_(False)
    return model, tokenizer, reference


def sft_term_data(cfg: RLConfig, tokenizer: Any) -> tuple[list[Any], list[list[int]]]:
    """The gold examples of the supervised term, the SFT data ``cfg.init`` was trained on (its config is read from
    its metadata), and each step's batch of them."""
    from training.batches import plan_batches
    from training.config import SFTConfig
    from training.dataset import build_examples

    path = init_dir(cfg) / runs.META_FILE
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


def step_record(
    step: int, epoch: int, cases: list[int], episodes: list[Episode], rewards: list[float], group: int,
    rows: list[grpo.Row], totals: Counter, seconds: dict[str, float], agent_stats: dict[str, Any], iterations: int = 1,
) -> dict[str, Any]:  # fmt: skip
    """The history's record of one step: its ``cases`` (indices among the run's), rewards, outcomes, loss terms (each
    a mean over the ``iterations`` passes), tokens, timings (``rollout``, ``step``)."""
    totals = Counter({k: v / iterations for k, v in totals.items()})
    n_tokens = sum(len(r.old_logprobs) for r in rows)
    t_rollout, t_step = seconds["rollout"], seconds["step"]
    unsolvable = [ep for ep in episodes if not ep.solvable]
    groups = [rewards[g : g + group] for g in range(0, len(rewards), group)]
    return {
        "step": step,
        "epoch": epoch,
        "cases": cases,
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
        "loss": round(totals["loss"], 5),
        "clip_frac": round(totals["clipped"] / n_tokens, 4) if n_tokens else 0.0,
        **({"kl": round(totals["kl"] / n_tokens, 5)} if "kl" in totals and n_tokens else {}),
        **({"sft_loss": round(totals["sft_loss"], 5)} if "sft_loss" in totals else {}),
        "generated_tokens": agent_stats.get("generated", 0),
        "rollout_s": round(t_rollout, 2),
        "episodes_per_s": round(len(episodes) / t_rollout, 3) if t_rollout else 0.0,
        "step_s": round(t_step, 2),
    }  # fmt: skip
