"""Early stopping at a measured target (``SFTConfig.until_success``): every ``check_every`` steps from
``check_from``, the model in training plays ``check_tasks`` dev-split tasks of its task families, greedy and clean,
through the same episode runner as an evaluation; training stops once the lower bound of the 95% interval of its
success there reaches the target, as a gate judges a criterion. The dev split is neither trained on nor gated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.task import Task
    from training.config import SFTConfig


def check_tasks(cfg: SFTConfig) -> list[Task]:
    """The tasks every check of the run plays: the same ones each time, drawn by the run's seed."""
    from sandbox import tasks
    from sandbox.errors import UsageError

    drawn = tasks(cfg.domain, "dev", cfg.check_tasks, cfg.seed, cfg.task_families or None)
    if not drawn:
        raise UsageError(f"--until-success: {cfg.domain} has no dev-split task of the families trained on")
    return drawn


def due(cfg: SFTConfig, done: int) -> bool:
    """Whether a check follows step ``done`` (never after the last: the run ends there anyway)."""
    first = cfg.check_from or cfg.check_every
    return cfg.until_success > 0 and first <= done < cfg.steps and (done - first) % cfg.check_every == 0


def check(model: Any, tokenizer: Any, tasks: list[Task], step: int) -> dict[str, Any]:
    """The model's clean success on ``tasks`` now: solved, n and the 95% interval."""
    from sandbox.case import Case, run_cases
    from sandbox.metrics import wilson
    from training.generating import generating
    from training.inference.model_agent import HFAgent

    with generating(model) as generator:
        agent = HFAgent(model=generator, tokenizer=tokenizer, name=f"sft-step-{step}")
        episodes = run_cases(agent, [Case(t) for t in tasks])
    solved = sum(e.success for e in episodes)
    low, high = wilson(solved, len(episodes))
    return {"step": step, "solved": solved, "n": len(episodes), "low": round(low, 4), "high": round(high, 4)}


def reached(result: dict[str, Any], target: float) -> bool:
    return result["low"] >= target
