"""Drawing cases: task pools, perturbation classes by tier or name, the severity rule, fixed samples; and the tasks
a check runs on (``check_tasks``: ``openagent check-domain``'s and ``diff-test``'s).

One rule for every draw (the fixed evaluation sample, Hypothesis' strategies, PAFT's data): a
severity is an integer from :meth:`Perturbation.severity_floor` to the class' ``max_severity``, and a class is
drawn for a task only where its mildest instance changes that task.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from sandbox.errors import UsageError
from sandbox.evaluation.sample import DomainSpec, Sample, TierSpec
from sandbox.perturbations import registry
from sandbox.perturbations.base import Perturbation, Pool
from sandbox.seeds import child_seed
from sandbox.task import SPLITS, Task

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.domain import Domain

SEEDS = 1000
"""Perturbation seeds are drawn from ``range(SEEDS)``."""


def domain_names(domain: DomainSpec) -> tuple[str, ...]:
    """``"all"`` (every registered domain), one domain or several, as registered names (a Domain object or
    a ``module:attribute`` is registered on the way, see :func:`sandbox.get_domain`)."""
    from sandbox.domains import DOMAINS, get_domain

    if isinstance(domain, str) and domain == "all":
        return tuple(DOMAINS)
    items = [domain] if isinstance(domain, str) or not isinstance(domain, Sequence) else list(domain)
    return tuple(get_domain(d).name for d in items)


def domain_label(domain: DomainSpec) -> str | list[str]:
    """``domain`` as a report records it: as given where it is text, by name where it holds Domain objects."""
    if isinstance(domain, str):
        return domain
    if isinstance(domain, Sequence):
        texts = [d for d in domain if isinstance(d, str)]
        if len(texts) == len(domain):
            return texts
    names = domain_names(domain)
    return names[0] if not isinstance(domain, Sequence) else list(names)


def task_pool(domains: tuple[str, ...], split: str, families: Sequence[str] | None = None) -> tuple[Task, ...]:
    """The split's tasks of ``domains`` (of the task ``families`` named, if given): solvable first, then by
    number of calls (the order shrinking follows)."""
    from sandbox.domain import checked_families
    from sandbox.domains import get_domain

    if split not in SPLITS:
        raise UsageError(f"Unknown split {split!r}. Use one of {', '.join(SPLITS)}.")
    # Kept per Domain object, not per name: a name registered again (a re-imported module) gets its own pool.
    pool = _pool(tuple(get_domain(d) for d in domains), split)
    only = checked_families(families, sorted({t.family for t in pool}))
    return pool if only is None else tuple(t for t in pool if t.family in only)


def check_tasks(
    domain: DomainSpec,
    split: str = "test",
    families: Sequence[str] | None = None,
    per_family: int | None = None,
    skip: Iterable[str] = (),
) -> list[Task]:
    """The tasks to check: every task of ``split`` (of the ``families`` named), at most ``per_family`` of each
    family if given, without the ids in ``skip``; an id in ``skip`` that no task has is misuse (a typo)."""
    from sandbox.domain import checked_families
    from sandbox.domains import get_domain

    if split not in SPLITS:
        raise UsageError(f"Unknown split {split!r}. Use one of {', '.join(SPLITS)}.")
    # In each domain's own order (its draw), not the sorted pool's: the first N of a family are a fair sample.
    tasks = [t for d in domain_names(domain) for t in get_domain(d).tasks(split)]
    only = checked_families(families, sorted({t.family for t in tasks}))
    tasks = [t for t in tasks if only is None or t.family in only]
    skip = set(skip)
    unknown = skip - {t.id for t in tasks}
    if unknown:
        raise UsageError(f"no {split} task has the id {', '.join(sorted(unknown))}; give ids of the domain's tasks")
    kept, seen = [], Counter[tuple[str, str]]()
    for task in tasks:
        if task.id in skip or (per_family is not None and seen[task.domain, task.family] >= per_family):
            continue
        seen[task.domain, task.family] += 1
        kept.append(task)
    if not kept:
        raise UsageError(f"no {split} task is left to check in {domain}")
    return kept


@lru_cache(maxsize=16)
def _pool(domains: tuple[Domain, ...], split: str) -> tuple[Task, ...]:
    pool = [t for d in domains for t in d.tasks(split)]  # type: ignore[arg-type]  # a str split: Domain.tasks checks it, one clear error
    return tuple(sorted(pool, key=lambda t: (not t.solvable, t.n_calls, t.domain, t.family, t.id)))


def perturbation_classes(
    tier: TierSpec | None, names: str | Iterable[str] | None = None
) -> tuple[type[Perturbation], ...]:
    """Registered perturbation classes of ``tier`` (or named), in registry order; the error says what exists."""
    tiers = registry.normalize_tiers("all" if tier is None else tier)
    if names is not None:
        wanted = [names] if isinstance(names, str) else list(names)
        classes = []
        for name in wanted:
            cls = registry.get(name)  # an UnknownName, with "did you mean", for a typo
            if cls.tier not in tiers:
                raise UsageError(f"perturbation {name!r} is in tier {cls.tier!r}, not {tiers}; drop tier= or the name")
            classes.append(cls)
        order = registry.names(model_faults=True)
        return tuple(sorted(classes, key=lambda c: order.index(c.name)))
    classes = [registry.get(n) for n in registry.names(tiers)]
    if not classes:
        known = registry.names()
        raise UsageError(
            f"no perturbation is registered in tier {', '.join(tiers)}; registered: {', '.join(known) or 'none'}"
        )
    return tuple(classes)


def drifting(classes: tuple[type[Perturbation], ...]) -> tuple[type[Perturbation], ...]:
    """The classes that may start mid-episode (``Perturbation.can_drift``); an error naming them where none can."""
    found = tuple(c for c in classes if c.can_drift())
    if not found:
        raise UsageError(
            f"drift: none of {', '.join(c.name for c in classes)} can start mid-episode; drift applies to "
            "perturbations of the tool surface and of interaction (tiers perception and interaction, but the query's)"
        )
    return found


def max_onset(task: Task) -> int:
    """The latest onset drawn for ``task``: one turn before its gold plan's last wave (1 for a plan of one wave),
    so the drift arrives while there is still work to do."""
    return max(1, len(task.waves()) - 1)


def with_onset(spec: Perturbation, after: int) -> Perturbation:
    """``spec`` starting after turn ``after`` (checked: a class that cannot drift refuses)."""
    return type(spec)(**{**spec.model_dump(), "after": after})


_DRIFTS: dict[tuple[type[Perturbation], str], bool] = {}


def drift_applicable(classes: tuple[type[Perturbation], ...], task: Task) -> tuple[type[Perturbation], ...]:
    """The classes that change ``task`` when they start after its first turn (a tool withdrawn for good needs a
    wave of calls still to come), in order; kept per class and task."""
    out = []
    for cls in applicable(classes, task):
        key = (cls, task.id)
        if key not in _DRIFTS:
            _DRIFTS[key] = with_onset(mildest(cls), 1).applies_to(task)
        if _DRIFTS[key]:
            out.append(cls)
    return tuple(out)


def draw_severity(cls: type[Perturbation], rng: random.Random) -> int:
    return rng.randint(cls.severity_floor(), cls.max_severity)


def draw_perturbation(cls: type[Perturbation], rng: random.Random, pool: Pool) -> Perturbation:
    """An instance of ``cls``: severity by the one rule, seed from ``range(SEEDS)``."""
    return cls(severity=draw_severity(cls, rng), pool=pool, seed=rng.randrange(SEEDS))


@lru_cache(maxsize=1024)
def mildest(cls: type[Perturbation]) -> Perturbation:
    return cls(severity=cls.severity_floor())


_APPLIES: dict[tuple[type[Perturbation], str], bool] = {}


def applies(cls: type[Perturbation], task: Task) -> bool:
    """Whether ``cls`` changes ``task`` (its mildest instance decides; kept per class and task)."""
    key = (cls, task.id)
    found = _APPLIES.get(key)
    if found is None:
        found = _APPLIES[key] = mildest(cls).applies_to(task)
    return found


_APPLICABLE: dict[tuple[tuple[type[Perturbation], ...], str], tuple[type[Perturbation], ...]] = {}


def applicable(classes: tuple[type[Perturbation], ...], task: Task) -> tuple[type[Perturbation], ...]:
    """The classes that apply to ``task``, in order; asked once per drawn example, so kept."""
    key = (classes, task.id)
    found = _APPLICABLE.get(key)
    if found is None:
        found = _APPLICABLE[key] = tuple(c for c in classes if applies(c, task))
    return found


def draw_cases(
    tiers: TierSpec = "all",
    n: int = 50,
    seed: int = 0,
    domain: DomainSpec = "poi",
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = 1,
    pool: Pool = "eval",
    families: Sequence[str] | None = None,
    drift: bool = False,
) -> list:
    """The fixed sample: ``n`` perturbed cases per tier, drawn from ``seed`` alone, on tasks of the task
    ``families`` named (all if ``None``). With ``drift``, also ``n`` drift cases per tier where a perturbation of the
    tier can drift: the same draw over those perturbations, each with an onset from 1 to :func:`max_onset` (the
    static cases are the ones drawn without it).

    A tier with no perturbation registered, or none that applies to the domain's tasks, is skipped
    when ``tiers="all"`` and an error when asked for by name.
    """
    return draw_sample(Sample(tiers, n, seed, domain, split, names, max_stack, pool, families, drift))


def draw_sample(sample: Sample) -> list[Case]:
    """The cases of ``sample`` (:func:`draw_cases`)."""
    from sandbox.case import Case

    if sample.n < 1:
        raise UsageError(f"n must be at least 1 case per tier, got {sample.n}")
    if sample.max_stack < 1:
        raise UsageError(f"max_stack must be at least 1, got {sample.max_stack}")
    tasks = task_pool(domain_names(sample.domain), sample.split, sample.families)
    tiers, names = sample.tiers, sample.names
    if names is not None:
        perturbation_classes(tiers, names)  # unknown names and names outside ``tiers`` fail here, with a hint
    out: list[Case] = []
    for tier in registry.normalize_tiers(tiers):
        named = [c for c in names if registry.get(c).tier == tier] if names is not None else None
        if (tiers == "all" and not registry.names(tier)) or named == []:
            continue
        classes = perturbation_classes(tier, named)
        if tiers == "all" and not any(applicable(classes, t) for t in tasks):
            continue  # e.g. no refusal scenario applies to BFCL's multi-turn tasks: the report has no such row
        rng = random.Random(child_seed(sample.seed, "evaluate", tier))
        out += [_draw_case(tasks, classes, rng, sample, f"tier {tier}") for _ in range(sample.n)]
        moving = tuple(c for c in classes if c.can_drift())
        if sample.drift and any(drift_applicable(moving, t) for t in tasks):
            rng = random.Random(child_seed(sample.seed, "evaluate", tier, "drift"))
            for _ in range(sample.n):
                case = _draw_case(tasks, moving, rng, sample, f"tier {tier}", drift_applicable)
                out.append(Case(case.task, tuple(_onset(p, case.task, rng) for p in case.perturbations)))
    return out


def _onset(spec: Perturbation, task: Task, rng: random.Random) -> Perturbation:
    """``spec`` from a drawn onset, or from turn 1 where the drawn one leaves nothing to change (a tool to withdraw
    after it): ``drift_applicable`` drew the class for a task where turn 1 does."""
    moved = with_onset(spec, rng.randint(1, max_onset(task)))
    return moved if moved.applies_to(task) else with_onset(spec, 1)


def _draw_case(
    tasks: Sequence[Task],
    classes: tuple[type[Perturbation], ...],
    rng: random.Random,
    sample: Sample,
    what: str,
    fits: Callable[[tuple[type[Perturbation], ...], Task], tuple[type[Perturbation], ...]] = applicable,
) -> Case:
    from sandbox.case import Case

    for _attempt in range(100):
        task = tasks[rng.randrange(len(tasks))]
        fitting = fits(classes, task)
        if fitting:
            break
    else:
        raise UsageError(f"no perturbation of {what} applies to the {sample.split} tasks of {sample.domain}")
    kinds = rng.sample(fitting, k=rng.randint(1, min(sample.max_stack, len(fitting))))
    return Case(task, tuple(draw_perturbation(c, rng, sample.pool) for c in kinds))
