"""The search for the worst case: Hypothesis' ``target()`` climbs toward the cases of highest degradation.

Two ways in. ``--openagent-search worst`` makes every ``@openagent.perturb`` test report the degradation of
its case (:func:`aim`), so Hypothesis, once half its examples are drawn, mutates the worst ones to make
them worse; the session then reports the worst case per tier. ``openagent eval --worst N`` runs
:func:`search_tier` for each tier of its report: ``N`` cases drawn as the property tests draw them,
climbing the same way and stopping at the first failure the perturbations caused, which Hypothesis then
shrinks. What is scored lives in :mod:`sandbox.evaluation.degradation`, what is reported in
:mod:`sandbox.evaluation.worst_case`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hypothesis_seed

from pytest_openagent.strategies import DomainSpec, cases
from sandbox.agent import fingerprint
from sandbox.case import Case
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EPISODES, EpisodeCache, prepare
from sandbox.evaluation.degradation import Found, WorstCase, caused, degradation, perturbation_seed, worst_case
from sandbox.evaluation.draw import domain_names, task_pool
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.runner import Runner
from sandbox.seeds import child_seed

LABEL = "degradation"
"""The label of the score given to ``hypothesis.target()``."""
WORST_STACK = 2
"""The most perturbations a case of ``openagent eval --worst`` stacks (or ``--max-stack``, if larger)."""


class _Caused(Exception):
    """The case failed where its clean twin succeeds: the search stops there and Hypothesis shrinks it."""


def aim(record: Record) -> float:
    """Tell Hypothesis how badly this example's case hurt the agent (inside a test Hypothesis runs)."""
    score = degradation(record)
    target(score, label=LABEL)
    return score


def search_tier(
    agent: Any,
    tier: str,
    budget: int,
    seed: int,
    runner: Runner,
    *,
    domain: DomainSpec = "poi",
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = WORST_STACK,
    families: Sequence[str] | None = None,
    targeted: bool = True,
) -> Found:
    """Search ``budget`` cases of ``tier`` for the one that hurts ``agent`` most, through ``runner``.

    The same seed gives the same search. ``targeted=False`` searches as the property tests do by default
    (nothing given to ``target()``): the baseline a targeted search is measured against. ``families`` keeps the
    tasks of those task families.
    """
    tasks = None if families is None else task_pool(domain_names(domain), split, families)
    strategy = cases(
        tier, names, domain=domain, split=split, max_stack=max_stack, tasks=tasks, seed=perturbation_seed(seed)
    )
    found = Found()
    agent_id = fingerprint(agent)

    def examine(case: Case) -> None:
        episode, clean = runner.run(agent, case)
        record = Record.of(runner.test, agent_id, case, episode, clean)
        found.add(record)
        if targeted:
            aim(record)
        if caused(record):
            raise _Caused(case.describe())

    run = given(case=strategy)(examine)
    run = settings(
        max_examples=budget, database=None, deadline=None, verbosity=Verbosity.quiet, report_multiple_bugs=False,
        phases=(Phase.generate, Phase.target, Phase.shrink), suppress_health_check=list(HealthCheck),
    )(run)  # fmt: skip
    run = hypothesis_seed(child_seed(seed, "worst", tier))(run)
    with contextlib.suppress(_Caused):
        run()
    return found


def search_tiers(
    agent: Any,
    tiers: Iterable[str],
    budget: int,
    seed: int,
    runner: Runner,
    *,
    domain: DomainSpec = "poi",
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = WORST_STACK,
    families: Sequence[str] | None = None,
) -> list[WorstCase]:
    """The worst case of each tier (a tier none of whose ``names`` is in it is skipped), neighbourhoods included."""
    from sandbox.perturbations import registry

    names = list(names) if names is not None else None
    out = []
    for tier in tiers:
        named = None if names is None else [n for n in names if registry.get(n).tier == tier]
        if named == []:
            continue
        runner.test = f"worst:{tier}"
        found = search_tier(
            agent, tier, budget, seed, runner, domain=domain, split=split, names=named, max_stack=max_stack,
            families=families,
        )  # fmt: skip
        worst = worst_case(found, tier, agent, runner, seed=seed, search="openagent eval --worst")
        if worst is not None:
            out.append(worst)
    return out


def worst_of(
    agent: Any,
    report: Report,
    budget: int,
    seed: int,
    *,
    domain: DomainSpec = "poi",
    names: Iterable[str] | None = None,
    max_stack: int = 1,
    families: Sequence[str] | None = None,
    max_steps: int | None = None,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
) -> list[WorstCase]:
    """The worst case of each tier ``report`` measured (``openagent eval --worst N``), through the episode cache
    in ``cache_dir`` (``None``: in memory); stacks of up to :data:`WORST_STACK` perturbations, or ``max_stack``."""
    cache = EpisodeCache(None if cache_dir is None else prepare(Path(cache_dir)) / EPISODES)
    tiers = [row.scope for row in report.rows() if row.kind == "tier"]
    try:
        return search_tiers(
            agent, tiers, budget, seed, Runner(cache, max_steps=max_steps), domain=domain, names=names,
            max_stack=max(WORST_STACK, max_stack), families=families,
        )  # fmt: skip
    finally:
        cache.flush()
