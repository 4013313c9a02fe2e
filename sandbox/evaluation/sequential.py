"""The sequential gate: the fixed sample run in rounds, each criterion stopped as soon as its verdict is settled.

The fixed sample is cut into groups (a tier's static cases, its drift cases), each in the order it was drawn. Every
round runs the next :data:`ROUND` cases (and their clean twins) of each group that a criterion still open covers.
After each round every open criterion is looked at: its observations, the k-th case of each of its groups in turn,
feed a confidence sequence (:mod:`sandbox.evaluation.confseq`) at level ``1 - ALPHA_SEQUENCE``; once that interval is
wholly on one side of the threshold the criterion is settled, PASS or FAIL, and its groups run no further for it.
A criterion whose groups reach the fixed n is settled there, on the intersection of the sequence with the fixed-n
interval (Wilson's, Newcombe's) at level ``1 - ALPHA_FINAL``. A verdict is then wrong with probability at most
``ALPHA_SEQUENCE + ALPHA_FINAL`` = 0.05, today's level, wherever it stopped.

``tool_errors`` (a share of calls, not of cases) and ``episodes`` hold their groups to the fixed n and are read there
as before; ``worst.*`` as
before. A report records the order its cases ran in (``meta["sequential"]``), so :func:`check_sequential` gives the
same verdicts when ``openagent gate`` reads it later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sandbox.errors import UsageError
from sandbox.evaluation.confseq import ConfidenceSequence
from sandbox.evaluation.criterion import Check, Criterion
from sandbox.evaluation.report import DRIFT, Record, Report
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.evaluation.runner import Runner

FixedCheck = Callable[[Report, Criterion], Check]
"""The fixed gate's check of one criterion on a report (:func:`sandbox.evaluation.gate.check`)."""

ALPHA_SEQUENCE = 0.025
"""The error the confidence sequence may spend over all looks before the fixed n."""
ALPHA_FINAL = 0.025
"""The error the look at the fixed n may spend (its Wilson and Newcombe intervals are at 97.5%)."""
Z_FINAL = 2.241403
"""The two-sided normal quantile of ``1 - ALPHA_FINAL``."""
ROUND = 10
"""Cases (with their clean twins) each open group runs per round."""
GRID = 1000
"""Candidate means of the confidence sequence (a step of 0.001)."""
SEQUENTIAL_METRICS = ("success", "clean", "delta", "refusal", "wrong_refusal", "repeated_write")
"""Metrics whose criteria may stop early: a mean over cases of a value in [0, 1] (delta after rescaling)."""


def group_of(case: Case) -> str:
    """A case's group: its tier (the highest of its perturbations'), with ``-drift`` when one starts mid-episode."""
    tier = max((p.tier for p in case.perturbations), key=TIERS.index)
    return tier + (DRIFT if any(getattr(p, "after", 0) for p in case.perturbations) else "")


def covers(scope: str, group: str, names: Sequence[str]) -> bool:
    """Whether ``scope`` may hold cases of ``group``, whose drawn cases hold the perturbations ``names``."""
    if scope in ("clean", "all"):
        return True
    drift = scope.endswith(DRIFT)
    if drift != group.endswith(DRIFT):
        return False
    base = scope.removesuffix(DRIFT)
    return base == group.removesuffix(DRIFT) if base in TIERS else base in names


def in_scope(record: Record, scope: str) -> bool:
    if scope in ("clean", "all"):
        return True
    base = scope.removesuffix(DRIFT)
    if record.drift != scope.endswith(DRIFT):
        return False
    return record.tier == base if base in TIERS else base in record.perturbations


def observation(record: Record, scope: str, metric: str) -> float | None:
    """What ``record`` tells of ``metric`` in ``scope``, in [0, 1]; ``None`` where it tells nothing (a solvable case
    for ``refusal``). ``delta`` is ``(perturbed - clean + 1) / 2`` of the pair."""
    if scope == "clean":
        success, solvable, outcome = record.clean_success, record.clean_solvable, record.clean_outcome
    else:
        success, solvable, outcome = record.success, record.solvable, record.outcome
    if metric == "delta":
        return (record.success - record.clean_success + 1) / 2
    if metric == "clean":
        return float(record.clean_success)
    if metric == "refusal":
        return None if solvable else float(outcome == "refused")
    if metric == "wrong_refusal":
        return float(outcome == "wrong_refusal") if solvable else None
    if metric == "repeated_write":
        return float(outcome == "repeated_write")
    return float(success)


def _points(metric: str, unit: float) -> float:
    return 100 * (2 * unit - 1) if metric == "delta" else unit


def _fmt(metric: str, value: float) -> str:
    return f"{value:+.1f} points" if metric == "delta" else f"{value:.3f}"


def sequential_check(
    criterion: Criterion,
    by_group: dict[str, list[Record]],
    drawn: dict[str, int],
    names: dict[str, list[str]],
    fixed_check: FixedCheck,
    states: dict[str, tuple[ConfidenceSequence, int]] | None = None,
) -> tuple[Check, bool]:
    """One look at ``criterion`` over the records run so far (per group, in drawn order): its check, and whether it is
    settled. ``drawn`` is each group's fixed n, ``names`` the perturbations of each group's drawn cases; ``states``
    keeps each criterion's sequence between looks, so that a look feeds it only the new blocks."""
    c = criterion
    groups = [g for g in by_group if covers(c.scope, g, names.get(g, ()))]
    complete = all(len(by_group[g]) >= drawn[g] for g in groups)
    ran = [r for g in groups for r in by_group[g]]
    if c.metric not in SEQUENTIAL_METRICS or (c.scope == "clean" and c.metric == "delta"):
        fixed = fixed_check(Report(ran, {}), c)
        hold = c.metric in ("tool_errors", "episodes")
        if hold and not complete:
            detail = f"read at the fixed n only ({_progress(groups, by_group, drawn)})"
            return Check(c.text, "INCONCLUSIVE", detail), False
        return fixed, True
    states = {} if states is None else states
    cs, fed = states.get(c.text) or (ConfidenceSequence(ALPHA_SEQUENCE, GRID), 0)
    k = min((len(by_group[g]) for g in groups), default=0)
    for i in range(fed, k):
        cs.add([x for g in groups if (x := observation(by_group[g][i], c.scope, c.metric)) is not None])
    states[c.text] = (cs, k)
    if not cs.n:
        return Check(c.text, "FAIL" if complete else "INCONCLUSIVE", f"nothing measured yet for {c.scope!r}"), complete
    low, high = (_points(c.metric, x) for x in cs.interval)
    n, value = cs.n, _points(c.metric, cs.mean)
    how = "confidence sequence"
    if complete:
        row = Report([r for r in ran if in_scope(r, c.scope)], {}).row(c.scope)
        if row is not None:
            f_low, f_high = _fixed_interval(row, c.metric)
            both = (max(low, f_low), min(high, f_high))
            low, high = both if both[0] <= both[1] else (f_low, f_high)
            how += " and the fixed-n interval"
    verdict = c.verdict(low, high)
    detail = (f"measured {_fmt(c.metric, value)} [{_fmt(c.metric, low)}, {_fmt(c.metric, high)}] (n={n}, {how}; "
              f"{_progress(groups, by_group, drawn)})")  # fmt: skip
    return Check(c.text, verdict, detail), verdict != "INCONCLUSIVE" or complete


def _fixed_interval(row: Any, metric: str) -> tuple[float, float]:
    if metric == "delta":
        return row.delta.interval_at(Z_FINAL)
    rate = {"success": row.perturbed, "clean": row.clean, "refusal": row.refusal,
            "wrong_refusal": row.refused_solvable, "repeated_write": row.repeated_writes}[metric]  # fmt: skip
    return rate.interval_at(Z_FINAL)


def _progress(groups: list[str], by_group: dict[str, list[Record]], drawn: dict[str, int]) -> str:
    return ", ".join(f"{g} {len(by_group[g])}/{drawn[g]}" for g in groups) or "no group"


def run_sequential(
    runner: Runner,
    agent: Any,
    cases: Sequence[Case],
    criteria: Sequence[Criterion],
    fixed_check: FixedCheck,
    batch_size: int = 64,
    max_steps: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Record], dict[str, Any]]:
    """The fixed sample ``cases`` run in rounds until every criterion is settled; the records, and what the report
    keeps of the run (``meta["sequential"]``)."""
    if not criteria:
        raise UsageError("a sequential gate needs criteria with thresholds (e.g. 'clean.success>=0.8'), got none")
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(group_of(case), []).append(case)
    drawn = {g: len(cs) for g, cs in groups.items()}
    names = {g: sorted({p.name for c in cs for p in c.perturbations}) for g, cs in groups.items()}
    by_group: dict[str, list[Record]] = {g: [] for g in groups}
    stopped: dict[str, dict[str, Any]] = {}
    states: dict[str, tuple[ConfidenceSequence, int]] = {}
    rounds = 0
    while True:
        open_groups: set[str] = set()
        for c in criteria:
            if c.text in stopped or c.scope.startswith("worst."):
                continue
            check, settled = sequential_check(c, by_group, drawn, names, fixed_check, states)
            covered = [g for g in groups if covers(c.scope, g, names[g])]
            if settled:
                stopped[c.text] = {
                    "verdict": check.verdict,
                    "round": rounds,
                    "cases": {g: len(by_group[g]) for g in covered},
                }
            else:
                open_groups.update(covered)
        rounds += 1
        todo = [(g, case) for g in groups if g in open_groups for case in groups[g][len(by_group[g]) : ROUND * rounds]]
        if not todo:
            break
        records = runner.run_batches(agent, [case for _, case in todo], batch_size, max_steps, progress)
        for (g, _), record in zip(todo, records, strict=True):
            by_group[g].append(record)
    meta = {
        "alpha_sequence": ALPHA_SEQUENCE, "alpha_final": ALPHA_FINAL, "round": ROUND, "rounds": rounds - 1,
        "groups": {g: {"drawn": drawn[g], "names": names[g], "order": [r.case for r in by_group[g]]} for g in groups},
        "stopped": stopped, "cases_run": sum(map(len, by_group.values())), "cases_drawn": len(cases),
    }  # fmt: skip
    return [r for g in groups for r in by_group[g]], meta


def check_sequential(report: Report, criteria: Sequence[Criterion], fixed_check: FixedCheck) -> list[Check]:
    """The checks of a sequential run's report, read in the order its cases ran (``meta["sequential"]``)."""
    info = report.meta["sequential"]
    try:
        records = {r.case: r for r in report.records}
        by_group = {g: [records[key] for key in v["order"]] for g, v in info["groups"].items()}
        drawn = {g: int(v["drawn"]) for g, v in info["groups"].items()}
        names = {g: list(v["names"]) for g, v in info["groups"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"the report's sequential run is malformed ({type(exc).__name__}: {exc})") from None
    checks = []
    for c in criteria:
        if c.scope.startswith("worst."):
            checks.append(fixed_check(Report(report.records, {}, worst=report.worst), c))
            continue
        check = sequential_check(c, by_group, drawn, names, fixed_check)[0]
        stop = info.get("stopped", {}).get(c.text)
        if isinstance(stop, dict) and isinstance(stop.get("cases"), dict):
            where = ", ".join(f"{g} {k}" for g, k in stop["cases"].items())
            check = Check(check.text, check.verdict, f"{check.detail}; settled after {where} cases")
        checks.append(check)
    return checks
