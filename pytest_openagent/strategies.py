"""Hypothesis strategies for tasks, perturbations, stacks and cases.

Draws are ordered so that Hypothesis' shrinker, which moves each choice toward its simplest
value, moves a failure toward a shorter task (tasks are sampled from a pool sorted by number of
calls, solvable ones first), a lower tier (perturbations are sampled in tier order), a milder severity (integers
from the minimum upward) and fewer perturbations (lists shrink by dropping elements).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from hypothesis import assume
from hypothesis import strategies as st

from sandbox.case import Case
from sandbox.errors import UnknownName, UsageError
from sandbox.evaluation.draw import (
    SEEDS,
    DomainSpec,
    TierSpec,
    applicable,
    applies,
    domain_names,
    drift_applicable,
    drifting,
    max_onset,
    perturbation_classes,
    task_pool,
    with_onset,
)
from sandbox.perturbations.base import POOLS, Perturbation, Pool
from sandbox.task import Task

__all__ = ["cases", "perturbations", "stacks", "tasks"]


def tasks(
    domain: DomainSpec = "poi",
    split: str = "test",
    *,
    solvable: bool | None = None,
    max_calls: int | None = None,
) -> st.SearchStrategy[Task]:
    """Tasks of a domain's split, shrinking toward solvable tasks with fewer calls.

    ``domain`` is a name (``"all"`` for every registered domain), ``module:attribute``, a
    :class:`~sandbox.domain.Domain` or several; a domain that lists its tasks gives its list, however short.
    """
    names = domain_names(domain)
    return _sample(task_pool(names, split), "+".join(names), split, solvable, max_calls)


def _sample(
    tasks: Iterable[Task], name: str, split: str, solvable: bool | None, max_calls: int | None
) -> st.SearchStrategy[Task]:
    pool = [
        t
        for t in tasks
        if (solvable is None or t.solvable == solvable) and (max_calls is None or t.n_calls <= max_calls)
    ]
    if not pool:
        raise UsageError(f"no {split} task of {name!r} has solvable={solvable} and at most {max_calls} calls")
    # Sampling indices keeps the strategy's repr short (Hypothesis warns about a repr of 880 tasks).
    return st.sampled_from(range(len(pool))).map(_Pick(tuple(pool), f"{name}/{split}"))


class _Pick:
    def __init__(self, pool: tuple[Task, ...], name: str) -> None:
        self.pool = pool
        self.name = name

    def __call__(self, index: int) -> Task:
        return self.pool[index]

    def __repr__(self) -> str:
        return f"<{len(self.pool)} {self.name} tasks by number of calls>"


@st.composite
def _build(
    draw: st.DrawFn,
    cls: type[Perturbation],
    pool: Pool,
    severities: st.SearchStrategy[int],
    seeds: st.SearchStrategy[int],
) -> Perturbation:
    severity = draw(severities)
    seed = draw(seeds)
    return cls(severity=severity, pool=pool, seed=seed)


# Strategies are memoised: Hypothesis checks each new strategy object, which costs more than a draw.
# The integer strategies are built here once, not looked up in Hypothesis' cache on every draw.
@lru_cache(maxsize=4096)
def _one(cls: type[Perturbation], pool: Pool, seed: int | None = None) -> st.SearchStrategy[Perturbation]:
    seeds = st.integers(0, SEEDS - 1) if seed is None else st.just(seed)
    return _build(cls, pool, st.integers(cls.severity_floor(), cls.max_severity), seeds)


@lru_cache(maxsize=4096)
def _kinds(
    classes: tuple[type[Perturbation], ...], min_size: int, max_size: int, pool: Pool, seed: int | None = None
) -> st.SearchStrategy[list[Perturbation]]:
    """Distinct perturbations, each drawn whole (its kind, then its severity and seed) as one element of the list:
    deleting an element while shrinking takes its settings with it, so the others keep theirs and a failure that
    needs one perturbation shrinks to it (drawing the kinds first and the settings after shifted every later
    perturbation's settings onto the next kind at each deletion, and stacks stuck at three)."""
    one = st.sampled_from(classes).flatmap(lambda cls: _one(cls, pool, seed))
    return st.lists(one, min_size=min_size, max_size=max_size, unique_by=lambda p: p.name)


def perturbations(
    tier: TierSpec | None = None,
    names: str | Iterable[str] | None = None,
    *,
    pool: Pool = "eval",
    task: Task | None = None,
) -> st.SearchStrategy[Perturbation]:
    """One perturbation of the given tiers (a name, a number 1-4, a list or ``"all"``) or names.

    ``task`` keeps those that apply to it. ``pool`` picks the vocabulary: ``eval`` for tests.
    """
    if pool not in POOLS:
        raise UsageError(f"Unknown pool {pool!r}. Use one of {', '.join(POOLS)}.")
    classes = perturbation_classes(tier, names)
    if task is not None:
        classes = tuple(c for c in classes if applies(c, task))
        if not classes:
            raise UsageError(f"none of the chosen perturbations applies to task {task.id}")
    return st.sampled_from(classes).flatmap(lambda cls: _one(cls, pool))


def stacks(
    max_size: int = 2,
    tier: TierSpec | None = None,
    names: str | Iterable[str] | None = None,
    *,
    min_size: int = 1,
    pool: Pool = "eval",
    task: Task | None = None,
) -> st.SearchStrategy[tuple[Perturbation, ...]]:
    """Stacks of distinct perturbations, applied in order; they shrink toward fewer and simpler ones."""
    if not 0 <= min_size <= max_size:
        raise UsageError(f"stack sizes must satisfy 0 <= min_size <= max_size, got {min_size} and {max_size}")
    classes = perturbation_classes(tier, names)
    if task is not None:
        classes = tuple(c for c in classes if applies(c, task))
    return _stack(classes, pool, min_size, max_size, task)


@st.composite
def _stack(
    draw: st.DrawFn,
    classes: tuple[type[Perturbation], ...],
    pool: Pool,
    min_size: int,
    max_size: int,
    task: Task | None,
) -> tuple[Perturbation, ...]:
    if len(classes) < min_size:
        assume(False)
    stack = tuple(draw(_kinds(classes, min_size, max_size, pool)))
    if task is not None:
        assume(all(p.applies_to(task) for p in stack))
    return stack


CLEAN_ODDS = 32
"""With ``min_stack=0``, one case in about this many is drawn clean: rare in the search, first in the shrink."""


@lru_cache(maxsize=1)
def _perturbed() -> st.SearchStrategy[bool]:
    # Hypothesis shrinks integers toward 0, so the clean case is the simplest one: a failure that does not need
    # its perturbations shrinks to it.
    return st.integers(0, CLEAN_ODDS - 1).map(bool)


@st.composite
def _cases(
    draw: st.DrawFn,
    task_strategy: st.SearchStrategy[Task],
    classes: tuple[type[Perturbation], ...],
    pool: Pool,
    max_stack: int,
    min_stack: int,
    drift: bool = False,
    seed: int | None = None,
) -> Case:
    task = draw(task_strategy)
    if min_stack == 0 and not draw(_perturbed()):
        return Case(task)
    fitting = drift_applicable(classes, task) if drift else applicable(classes, task)
    if not fitting:
        assume(False)
    stack = tuple(draw(_kinds(fitting, 1, max_stack, pool, seed)))
    if drift:
        # onsets from 1 up: a failure shrinks toward the first turn after which the change still breaks the agent
        stack = tuple(with_onset(p, draw(_onsets(max_onset(task)))) for p in stack)
    assume(all(p.applies_to(task) for p in stack))
    return Case(task, stack)


@lru_cache(maxsize=64)
def _onsets(latest: int) -> st.SearchStrategy[int]:
    return st.integers(1, latest)


def cases(
    tier: TierSpec | None = None,
    names: str | Iterable[str] | None = None,
    *,
    domain: DomainSpec = "poi",
    split: str = "test",
    max_stack: int = 1,
    min_stack: int = 1,
    pool: Pool = "eval",
    tasks: st.SearchStrategy[Task] | Sequence[Task | str] | None = None,
    drift: bool = False,
    seed: int | None = None,
) -> st.SearchStrategy[Case]:
    """Cases: a task and a stack of 1 to ``max_stack`` perturbations that apply to it.

    ``drift=True`` draws only perturbations that can start mid-episode, each with an onset (``after``) from 1 to
    one turn before the task's last wave of calls, shrinking toward 1.

    ``min_stack=0`` also draws the task clean, rarely (one case in :data:`CLEAN_ODDS`); as the simplest case,
    it is where a failure shrinks to when the agent fails the task with no perturbation too. ``seed`` gives every
    perturbation that seed instead of drawing one (the worst-case search climbs over how hard a case is, not
    over which names or texts a seed picks).

    The task comes from ``domain``'s ``split``, or from ``tasks``: a strategy, or a list of tasks or task ids
    of ``domain`` (shrinking in the same order as the domain's pool: solvable first, fewer calls first). From a
    domain or a list, only the tasks that one of the perturbations changes are drawn (the clean case too), so that
    a failure shrinks to the shortest task that can carry it; a strategy's tasks are drawn as it gives them.
    """
    if max_stack < 1:
        raise UsageError(f"max_stack must be at least 1, got {max_stack}")
    if min_stack not in (0, 1):
        raise UsageError(f"min_stack must be 0 (the clean case may be drawn) or 1, got {min_stack!r}")
    if pool not in POOLS:
        raise UsageError(f"Unknown pool {pool!r}. Use one of {', '.join(POOLS)}.")
    classes = perturbation_classes(tier, names)
    if drift:
        classes = drifting(classes)
    if isinstance(tasks, st.SearchStrategy):
        task_strategy = tasks
    else:
        domains = domain_names(domain)
        chosen = task_pool(domains, split) if tasks is None else _chosen(tasks, domains, split)
        name = "+".join(domains)
        task_strategy = _sample(_fitting(chosen, classes, drift, name, split), name, split, None, None)
    return _cases(task_strategy, classes, pool, max_stack, min_stack, drift, seed)


def _fitting(
    pool: Sequence[Task], classes: tuple[type[Perturbation], ...], drift: bool, name: str, split: str
) -> list[Task]:
    """The tasks of ``pool`` that one of ``classes`` changes (from a later turn, with ``drift``), in pool order.
    Only those can carry a perturbed case: drawing the others was only ever rejected, and a wall of them below a
    failing task kept the shrinker from reaching a shorter one (it stopped where the start left it, issue #45)."""
    if drift:
        found = [t for t in pool if drift_applicable(classes, t)]
    else:  # the first class that applies will do: a pool of 880 tasks is not checked against all 34 classes here
        found = [t for t in pool if any(applies(c, t) for c in classes)]
    if not found:
        after = " after the first turn" if drift else ""
        raise UsageError(
            f"none of {', '.join(c.name for c in classes)} changes a {split} task of {name!r}{after} "
            f"({len(pool)} tasks); pick perturbations that apply to them, or other tasks"
        )
    return found


def _chosen(tasks: Sequence[Task | str], names: tuple[str, ...], split: str) -> list[Task]:
    pool = task_pool(names, split)
    by_id = {t.id: t for t in pool}
    wanted = []
    for t in tasks:
        if isinstance(t, Task):
            wanted.append(t.id)
        elif t in by_id:
            wanted.append(t)
        else:
            raise UnknownName(f"{'+'.join(names)} {split} task", str(t), list(by_id))
    keep = set(wanted)
    extra = [t for t in tasks if isinstance(t, Task) and t.id not in by_id]
    return [t for t in pool if t.id in keep] + extra
