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
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
from hypothesis import seed as hypothesis_seed

from pytest_openagent.strategies import cases
from sandbox.agent import fingerprint
from sandbox.case import Case
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EPISODES, EpisodeCache, prepare
from sandbox.evaluation.degradation import Found, WorstCase, caused, degradation, perturbation_seed, worst_case
from sandbox.evaluation.draw import domain_names, task_pool
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.runner import Runner
from sandbox.evaluation.sample import Sample
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


def search_tier(agent: Any, tier: str, budget: int, runner: Runner, sample: Sample, *, targeted: bool = True) -> Found:
    """Search ``budget`` cases of ``tier`` for the one that hurts ``agent`` most, through ``runner``: stacks of up to
    the sample's ``max_stack`` of its perturbations ``names`` (all the tier's if ``None``), on the tasks of its
    ``domain``, ``split`` and ``families``; its ``seed`` seeds the search. Its ``pool`` and ``drift`` are not
    searched: the perturbations are the eval pool's, from the first turn.

    The same seed gives the same search. ``targeted=False`` searches as the property tests do by default
    (nothing given to ``target()``): the baseline a targeted search is measured against.
    """
    domain, split, seed = sample.domain, sample.split, sample.seed
    families = sample.families
    tasks = None if families is None else task_pool(domain_names(domain), split, families)
    strategy = cases(
        tier, sample.names, domain=domain, split=split, max_stack=sample.max_stack, tasks=tasks,
        seed=perturbation_seed(seed),
    )  # fmt: skip
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


def search_tiers(agent: Any, tiers: Iterable[str], budget: int, runner: Runner, sample: Sample) -> list[WorstCase]:
    """The worst case of each tier (a tier none of the sample's ``names`` is in is skipped), neighbourhoods
    included."""
    from sandbox.perturbations import registry

    names = sample.names
    out = []
    for tier in tiers:
        named = None if names is None else [n for n in names if registry.get(n).tier == tier]
        if named == []:
            continue
        runner.test = f"worst:{tier}"
        found = search_tier(agent, tier, budget, runner, replace(sample, names=named))
        worst = worst_case(found, tier, agent, runner, seed=sample.seed, search="openagent eval --worst")
        if worst is not None:
            out.append(worst)
    return out


def worst_of(
    agent: Any,
    report: Report,
    budget: int,
    sample: Sample,
    *,
    max_steps: int | None = None,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
) -> list[WorstCase]:
    """The worst case of each tier ``report`` measured (``openagent eval --worst N``) on the tasks and perturbations
    of the ``sample`` it measured, through the episode cache in ``cache_dir`` (``None``: in memory); stacks of up to
    :data:`WORST_STACK` perturbations, or the sample's ``max_stack``."""
    cache = EpisodeCache(None if cache_dir is None else prepare(Path(cache_dir)) / EPISODES)
    tiers = [row.scope for row in report.rows() if row.kind == "tier"]
    searched = replace(sample, max_stack=max(WORST_STACK, sample.max_stack))
    try:
        return search_tiers(agent, tiers, budget, Runner(cache, max_steps=max_steps), searched)
    finally:
        cache.flush()
