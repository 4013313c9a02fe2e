"""What both RL engines share (:mod:`training.rl`, our loop; :mod:`training.rl_trl`, TRL's): the options a run
can train with, the checkpoint it starts from, its perturbations and the metadata it writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from training import grpo
from training.config import RLConfig

ENGINES = ("own", "trl")
"""What runs the GRPO update: our loop (:mod:`training.grpo`) or TRL's ``GRPOTrainer`` (:mod:`training.rl_trl`)."""


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
                                 ("max_turns", cfg.max_turns, 1), ("iterations", cfg.iterations, 1))
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
    if cfg.engine not in ENGINES:
        problems.append(f"engine must be one of {', '.join(ENGINES)}, got {cfg.engine!r}")
    if cfg.loss_norm not in grpo.LOSS_NORMS:
        problems.append(f"loss_norm must be one of {', '.join(grpo.LOSS_NORMS)}, got {cfg.loss_norm!r}")
    if not 0 <= cfg.perturbed <= 1:
        problems.append(f"perturbed must be in [0, 1], got {cfg.perturbed}")
    if problems:
        raise UsageError(f"RLConfig: {'; '.join(problems)}")


def init_dir(cfg: RLConfig) -> Path:
    """The directory of the checkpoint ``cfg.init`` names (``hf:`` prefix and ``~`` allowed); a
    :class:`~training.inference.model_dir.CheckpointError` where it holds no model."""
    init = Path(cfg.init.removeprefix("hf:")).expanduser()
    if not (init / "config.json").is_file():
        from training.inference.model_dir import CheckpointError

        raise CheckpointError(f"--init {cfg.init!r}: no config.json there; give an SFT output directory")
    return init


def rl_perturbations(cfg: RLConfig) -> list[str]:
    if cfg.perturbed <= 0:
        return []
    from training.dataset import train_perturbations

    return train_perturbations(cfg.families)


def run_meta(cfg: RLConfig, config: dict, bf16: bool, pool: list, perturbations: list[str]) -> dict[str, Any]:
    """The run's metadata (the history and timings join it at the end)."""
    return {
        "kind": "rl", "algorithm": "grpo", "init": str(cfg.init), "base": str(cfg.init), "reward": config["reward"],
        "config": config, "bf16": bf16, "seed": cfg.seed,
        "data": {"domain": cfg.domain, "split": "train", "tasks": len(pool), "perturbed": cfg.perturbed,
                 "perturbed_cases": sum(bool(c.perturbations) for c in pool), "pool": "train",
                 "candidates": perturbations},
    }  # fmt: skip
