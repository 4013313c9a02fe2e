"""How badly a case hurts the agent (:func:`degradation`), and what a worst-case search found, as a
:class:`~sandbox.evaluation.worst_case.WorstCase`.

A search for the worst case (``--openagent-search worst``, ``openagent eval --worst N``) climbs toward the
cases of highest degradation with Hypothesis' ``target()``, then shrinks the failure it found. The search
needs Hypothesis, so it lives in the plugin; its score, and the neighbourhood its stack is re-run on, live
here, beside the reports that keep them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox.evaluation.worst_case import WorstCase
from sandbox.metrics import Rate

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.evaluation.report import Record
    from sandbox.evaluation.runner import Runner

FAILURE = 2.0
"""What a failure the perturbations caused (its clean twin succeeds) adds to the degradation."""
STRUGGLE_SCALE = 20
"""Extra calls and tool errors over the clean twin at which the struggle term reaches its most, 1."""
COST = 0.05
"""What each perturbation beyond the first, and the stack's mean severity (as a fraction of each one's
maximum), take off a failure: small beside it, so that of two failures the milder stack is the worse news.
Cases that do not fail pay nothing: a climb toward a failure must not be held back by the severity it needs."""
NEIGHBOURS = 20
"""Most tasks of the family the worst stack is re-run on."""


def perturbation_seed(seed: int) -> int:
    """The seed every perturbation of a worst-case search gets, from the search's seed: a climb over perturbation
    seeds meets only ties (which names or texts, not how hard), and Hypothesis' optimiser would spend the budget
    walking along them."""
    from sandbox.evaluation.draw import SEEDS
    from sandbox.seeds import child_seed

    return child_seed(seed, "worst") % SEEDS


def degradation(record: Record) -> float:
    """How badly a case hurts the agent, for ``hypothesis.target()``: higher is worse.

    :data:`FAILURE` if the case fails where its clean twin succeeds (a failure the clean twin shares is not
    the perturbations' doing and scores nothing for it), plus how far the episode strayed from the clean
    one: the calls it made beyond its twin's and its tool errors, over :data:`STRUGGLE_SCALE` (at most 1),
    and, for a failure, the share of the gold plan's calls it never got to make (half a point at most).
    Severity and stack size are costs of a failure (:data:`COST`).
    """
    from sandbox.perturbations import registry

    caused = not record.success and record.clean_success
    extra = max(0, record.calls - record.clean_calls) + record.tool_errors
    score = FAILURE * caused + min(1.0, extra / STRUGGLE_SCALE)
    if caused and record.n_calls:
        score += 0.5 * (1 - min(record.calls, record.n_calls) / record.n_calls)
    fractions = []
    for spec in record.stack:
        cls = registry.get(spec["name"]) if spec["name"] in registry.names() else None
        top = cls.max_severity if cls is not None else 0
        fractions.append(spec.get("severity", 0) / top if top else 0.0)
    if caused and fractions:
        score -= COST * (len(fractions) - 1 + sum(fractions) / len(fractions))
    return round(score, 6)


def caused(record: Record) -> bool:
    """Whether the case fails where its clean twin succeeds: a failure the perturbations caused."""
    return bool(record.perturbations) and not record.success and record.clean_success


@dataclass
class Found:
    """What a search saw of one tier, as it ran: the worst record and the last failure it caused."""

    worst: Record | None = None
    score: float = float("-inf")
    failure: Record | None = None
    records: list[Record] = field(default_factory=list)

    @property
    def examples(self) -> int:
        return len(self.records)

    @property
    def episodes(self) -> int:
        return len({r.case for r in self.records} | {("clean", r.task) for r in self.records if r.perturbations})

    def add(self, record: Record) -> float:
        score = degradation(record)
        self.records.append(record)
        if score > self.score:
            self.worst, self.score = record, score
        if caused(record):
            self.failure = record  # Hypothesis replays its shrunk failure last
        return score


def neighbourhood(agent: Any, case: Case, runner: Runner, limit: int = NEIGHBOURS) -> tuple[Rate, tuple[str, ...]]:
    """The success of ``case``'s stack on the other tasks of its task's family and split (those every
    perturbation of it applies to), the first ``limit`` in pool order, with the task ids."""
    from sandbox.case import Case
    from sandbox.evaluation.draw import task_pool

    task = case.task
    others = [
        t for t in task_pool((task.domain,), task.split, [task.family])
        if t.id != task.id and all(p.applies_to(t) for p in case.perturbations)
    ][:limit]  # fmt: skip
    successes = 0
    for other in others:
        episode, _clean = runner.run(agent, Case(other, case.perturbations))
        successes += episode.success
    return Rate(successes, len(others)), tuple(t.id for t in others)


def worst_case(
    found: Found,
    tier: str,
    agent: Any,
    runner: Runner | None,
    *,
    seed: int | None = None,
    search: str = "",
) -> WorstCase | None:
    """The :class:`WorstCase` of what a search ``found`` in ``tier``; its neighbourhood is run with ``agent``
    through ``runner`` (an empty neighbourhood where ``runner`` is ``None``: the agent is not at hand)."""
    from sandbox.case import Case
    from sandbox.perturbations.registry import from_dict

    worst = found.worst
    if worst is None:
        return None
    chosen = found.failure or worst
    rate, neighbours = Rate(0, 0), tuple[str, ...]()
    not_rerun = (
        "the test ran another agent than the session's (--openagent-agent), which is not at hand to re-run it"
        if runner is None
        else ""
    )
    if runner is not None:
        task = _task(chosen.domain, chosen.task)
        if task is None:
            not_rerun = f"its task {chosen.task!r} is in no split of domain {chosen.domain!r} here"
        else:
            stack = tuple(from_dict(p) for p in chosen.stack)
            rate, neighbours = neighbourhood(agent, Case(task, stack), runner)
    return WorstCase(
        tier=tier, case=worst.label, score=found.score, stack=worst.stack, task=worst.task, family=chosen.family,
        shrunk=None if found.failure is None else found.failure.label,
        shrunk_stack=() if found.failure is None else found.failure.stack, examples=found.examples,
        episodes=found.episodes, neighbourhood=rate, neighbours=neighbours, seed=seed, search=search,
        agent=chosen.agent, not_rerun=not_rerun,
    )  # fmt: skip


def _task(domain: str | None, task_id: str) -> Any:
    from sandbox.evaluation.draw import task_pool

    if domain is None:
        return None
    for split in ("test", "dev", "train"):
        found = next((t for t in task_pool((domain,), split) if t.id == task_id), None)
        if found is not None:
            return found
    return None
