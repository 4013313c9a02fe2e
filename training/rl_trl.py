"""``openagent train rl --engine trl``: the same run through TRL's ``GRPOTrainer``.

The same config, cases and outputs as :mod:`training.rl`: the run's train-pool cases play through
:class:`~training.trl_env.SandboxRollouts` (our batched generation and the sandbox's loop, so any surface a case
has, drift included), the judge's outcome through the run's reward is TRL's reward, and TRL does the rest: group
advantages, the clipped loss, the optimizer, checkpoints. The options map one to one (``group`` is
``num_generations``, ``tasks_per_step × group`` the batch, ``clip`` ``epsilon``, ``kl`` ``beta``, ``iterations``
``num_iterations``, ``loss_norm`` token/sequence is ``dapo``/``grpo``). Two things differ: TRL draws the order of
cases itself (seeded, each epoch every case once), and with ``iterations`` μ > 1 each of our steps is μ of TRL's.

The output is the same: the final model (LoRA merged) and ``openagent-train.json`` with the run's history (the
reward curve); a killed run resumes from TRL's newest checkpoint in ``OUT/checkpoints`` if it was written by a run
of the same options.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training import cpu, runs
from training.config import RLConfig
from training.rewards import get_reward, reward_name
from training.trl_env import SandboxRollouts, dataset_rows, judge_reward

if TYPE_CHECKING:
    from sandbox.episode import Episode

RUN_FILE = "openagent-run.json"
"""Written into each of TRL's checkpoints: the run's config (a resume must match it) and its history so far."""


class _Recorded(SandboxRollouts):
    """The rollouts, each generation's record kept for the run's history (the cases are the run's indices)."""

    def __init__(self, *args: Any, reward: Callable[[Episode], float], group: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reward, self.group = reward, group
        self.pending: dict[str, Any] | None = None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        t0 = time.perf_counter()
        out = super().__call__(prompts, trainer)
        t_rollout = time.perf_counter() - t0
        episodes = out["episode"]
        rewards = [float(self.reward(e)) for e in episodes]
        groups = [rewards[g : g + self.group] for g in range(0, len(rewards), self.group)]
        unsolvable = [e for e in episodes if not e.solvable]
        self.pending = {
            "cases": [int(p[-1]["case"]) for p in prompts[:: self.group]],
            "reward": round(sum(rewards) / len(rewards), 4),
            "rewards": [round(r, 4) for r in rewards],
            "groups": len(groups),
            "signal_groups": sum(len(set(g)) > 1 for g in groups),
            "success": round(sum(e.outcome == "success" for e in episodes) / len(episodes), 4),
            "refusal_rate": round(sum(e.outcome == "refused" for e in unsolvable) / len(unsolvable), 4)
            if unsolvable else None,
            "outcomes": dict(Counter(e.outcome for e in episodes)),
            "generated_tokens": sum(sum(m) for m in out["env_mask"]),
            "rollout_s": round(t_rollout, 2),
            "episodes_per_s": round(len(episodes) / t_rollout, 3) if t_rollout else 0.0,
        }  # fmt: skip
        return out


def _callback(rollouts: _Recorded, history: list[dict[str, Any]], config: dict[str, Any]) -> Any:
    from transformers import TrainerCallback

    class History(TrainerCallback):
        """Each of our steps (one generation) into ``history``, with its loss and wall time; the history and the
        config into each checkpoint TRL writes."""

        t0 = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            seconds = time.perf_counter() - self.t0
            if rollouts.pending is not None:
                history.append({"step": len(history) + 1, **rollouts.pending, "step_s": 0.0})
                rollouts.pending = None
            if history:
                history[-1]["step_s"] = round(history[-1]["step_s"] + seconds, 2)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if history and logs and "loss" in logs:
                history[-1]["loss"] = round(float(logs["loss"]), 5)
                if "kl" in logs:
                    history[-1]["kl"] = round(float(logs["kl"]), 5)

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                runs.write_json(folder / RUN_FILE, {"config": config, "history": history})

    return History()


def _resume_from(out: Path, config: dict[str, Any], cfg: RLConfig) -> tuple[str | None, list[dict[str, Any]]]:
    """TRL's newest checkpoint of this run's options, and the history it holds; ``(None, [])`` to start afresh."""
    import shutil

    root = out / runs.CHECKPOINTS
    points = sorted((p for p in root.glob("checkpoint-*") if p.name[11:].isdigit()), key=lambda p: int(p.name[11:]))
    for point in reversed(points if cfg.resume else []):
        try:
            saved = json.loads((point / RUN_FILE).read_text())
        except (OSError, ValueError):
            runs.warn(f"checkpoint {point} holds no readable {RUN_FILE}; skipping it")
            continue
        changes = runs.differences(saved.get("config", {}), config)
        if not changes:
            return str(point), list(saved.get("history", []))
        if not cfg.overwrite:
            raise runs.CheckpointError(
                f"the checkpoints in {out} were written by a run with other options ({'; '.join(changes)}). "
                "Rerun with the same options to resume it, or pass --no-resume or --overwrite to start over."
            )
        break
    shutil.rmtree(root, ignore_errors=True)
    return None, []


def grpo_config(cfg: RLConfig, output_dir: Path) -> Any:
    """TRL's ``GRPOConfig`` for ``cfg`` (see the module's docstring for the mapping)."""
    import torch
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(output_dir), max_steps=cfg.steps * cfg.iterations, num_iterations=cfg.iterations,
        per_device_train_batch_size=cfg.tasks_per_step * cfg.group, num_generations=cfg.group,
        gradient_accumulation_steps=1, learning_rate=cfg.lr, lr_scheduler_type="constant_with_warmup",
        warmup_steps=cfg.warmup, max_grad_norm=cfg.grad_clip or 1e9, adam_beta2=0.99, weight_decay=0.0,
        beta=cfg.kl, epsilon=cfg.clip, loss_type="dapo" if cfg.loss_norm == "token" else "grpo",
        temperature=cfg.temperature or 1.0, top_k=cfg.top_k, max_completion_length=cfg.max_turns * cfg.max_new_tokens,
        seed=cfg.seed, save_strategy="steps" if cfg.save_every else "no", save_steps=cfg.save_every * cfg.iterations
        or 1, save_total_limit=2, logging_steps=1, report_to=[], use_cpu=not torch.cuda.is_available(), bf16=cfg.bf16,
        disable_tqdm=not cfg.progress, log_completions=False,
    )  # fmt: skip


def train_trl(cfg: RLConfig, reward: str | Callable[[Episode], float] | None = None) -> Path:
    """GRPO from ``cfg.init`` into ``cfg.out`` through TRL (see the module's docstring); same reuse and resume rules
    as :func:`training.rl.train`."""
    from training.loop import begin, load_model
    from training.rl_common import check_config, init_dir, rl_perturbations, run_meta
    from training.rollouts import run_cases

    check_config(cfg)
    if cfg.sft_coef > 0:
        from sandbox.errors import UsageError

        raise UsageError(
            f"--sft-coef {cfg.sft_coef}: the supervised term is our loop's; TRL's GRPOTrainer has none. Use "
            "--engine own, or --sft-coef 0"
        )
    cpu.prepare()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    reward = reward if reward is not None else cfg.reward
    score = get_reward(reward)
    out = Path(cfg.out)
    config = {**cfg.to_dict(), "reward": reward_name(reward)}
    if runs.reuse_finished(out, config, cfg.overwrite):
        return out
    begin(cfg)
    checkpoint, history = _resume_from(out, config, cfg)
    init = init_dir(cfg)
    model, tokenizer = load_model(cfg, init)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    perturbations = rl_perturbations(cfg)
    pool = run_cases(cfg, perturbations)
    rollouts = _Recorded(pool, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_k=cfg.top_k,
                         max_turns=cfg.max_turns, seed=cfg.seed, reward=score, group=cfg.group)  # fmt: skip
    rollouts.calls = len(history)  # a resumed run samples its next steps as an unbroken one would
    from datasets import Dataset
    from trl import GRPOTrainer

    reward_funcs = [judge_reward(score)]
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,  # type: ignore[arg-type]  # TRL's list[float | None] is invariant; ours has no None
        args=grpo_config(cfg, out / runs.CHECKPOINTS),
        train_dataset=Dataset.from_list(dataset_rows(pool)), processing_class=tokenizer, rollout_func=rollouts,
        callbacks=[_callback(rollouts, history, config)],
    )  # fmt: skip
    if checkpoint is not None:
        runs.say(f"openagent train rl: resuming from {checkpoint} ({len(history)} of {cfg.steps} steps done)")
    t_start = time.perf_counter()
    trainer.train(resume_from_checkpoint=checkpoint)
    meta = run_meta(cfg, config, cfg.bf16, pool, perturbations)
    meta.update(engine="trl", steps=cfg.steps, history=history, train_seconds=round(time.perf_counter() - t_start, 1))
    trained = trainer.accelerator.unwrap_model(trainer.model)
    if trainer.accelerator.is_main_process:
        runs.export(trained, tokenizer, out, meta)
        runs.clear_checkpoints(out)
        import shutil

        shutil.rmtree(out / runs.CHECKPOINTS, ignore_errors=True)
    return out


__all__ = ["grpo_config", "train_trl"]
