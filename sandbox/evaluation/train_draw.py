"""The train-pool case a reset asks for: by seed, or an explicit task, tier, stack and severity.

What an environment server (``openagent env-serve``) or a trainer draws episodes from: tasks of the train split,
perturbations with the train pool's texts, so nothing trained on is what the gate measures.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from sandbox.case import Case
from sandbox.errors import UsageError, did_you_mean
from sandbox.evaluation.draw import draw_cases, task_pool
from sandbox.perturbations import registry
from sandbox.task import Task

RESET_KEYS = ("seed", "episode_id", "task", "tier", "stack", "severity")


def _task(domain: str, wanted: str) -> Task:
    pool = task_pool((domain,), "train")
    found = [t for t in pool if t.id in (wanted, f"{domain}-{wanted}", f"{domain}-train-{wanted}")]
    if found:
        return found[0]
    if any(t.id == wanted for split in ("test", "dev") for t in task_pool((domain,), split)):
        raise UsageError(f"task {wanted!r} is not of the train split: an environment serves train tasks only")
    raise UsageError(did_you_mean("task", wanted, [t.id for t in pool]))


def _stack(stack: Any, seed: int, severity: int | None) -> tuple[Any, ...]:
    from sandbox.proxy.serve import parse_perturbations

    items = [stack] if isinstance(stack, str) else stack
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise UsageError("stack must be a list of perturbation names (NAME[:SEVERITY][@ONSET]) or one such string")
    if severity is not None:
        items = [i if ":" in i.partition("@")[0] else f"{i.partition('@')[0]}:{severity}" + (
            f"@{i.partition('@')[2]}" if "@" in i else "") for i in items]  # fmt: skip
    return parse_perturbations(items, seed=seed, pool="train")


def train_case(domain: str, request: dict[str, Any]) -> Case:
    """The case of ``request`` (a ``/reset`` body) on ``domain``'s train split; :class:`UsageError` on one no case
    answers (an unknown key, task, tier or perturbation, a test task, a perturbation that does not apply)."""
    unknown = sorted(set(request) - set(RESET_KEYS))
    if unknown:
        raise UsageError(f"unknown reset field {', '.join(unknown)}; known: {', '.join(RESET_KEYS)}")
    seed, severity = request.get("seed", 0), request.get("severity")
    for name, value in (("seed", seed), ("severity", severity)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise UsageError(f"{name} must be a whole number of at least 0, got {value!r}")
    task = _task(domain, request["task"]) if request.get("task") is not None else None
    tier, stack = request.get("tier"), request.get("stack")
    if stack is not None:
        specs = _stack(stack, seed, severity)
        if task is None:
            fitting = [t for t in task_pool((domain,), "train") if all(p.applies_to(t) for p in specs)]
            if not fitting:
                raise UsageError(f"the stack {stack!r} changes no train task of {domain}")
            task = random.Random(seed).choice(fitting)
        for p in specs:
            if not p.applies_to(task):
                raise UsageError(f"perturbation {p.name} does not change task {task.id}")
        return Case(task, specs)
    if tier is None and task is not None:
        return Case(task)
    if tier is not None:
        registry.normalize_tiers(tier)  # an unknown tier: a usage error naming the known ones
    return _drawn(domain, tier or "all", seed, task, severity)


def _drawn(domain: str, tier: str, seed: int, task: Task | None, severity: int | None) -> Case:
    cases: Sequence[Case] = draw_cases(tier, 1 if task is None else 64, seed, domain, split="train", pool="train")
    if task is not None:
        cases = [c for c in cases if c.task.id == task.id] or [c for c in draw_cases(
            tier, 256, seed, domain, split="train", pool="train") if c.task.id == task.id]  # fmt: skip
        if not cases:
            raise UsageError(f"no perturbation of tier {tier} was drawn for task {task.id}; name one with stack")
    case = random.Random(seed).choice(list(cases))
    if severity is None:
        return case
    specs = tuple(_stack([f"{p.name}:{severity}" + (f"@{p.after}" if p.after else "")], p.seed, None)[0]
                  for p in case.perturbations)  # fmt: skip
    return Case(case.task, specs)


__all__ = ["RESET_KEYS", "train_case"]
