"""Two reports compared case by case: the one pairing that the gate's baseline comparison and training's
comparisons (the demo, PAFT against plain training) read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.evaluation.report import DRIFT
from sandbox.metrics import PairedDelta

if TYPE_CHECKING:
    from sandbox.evaluation.report import Record, Report


def in_scope(record: Record, scope: str) -> bool:
    """Whether ``record`` counts in a row's scope: ``clean`` (every case, through its clean twin), ``all`` (every
    perturbed case), a tier, or a tier's drift row (``<tier>-drift``)."""
    if scope == "clean":
        return True
    if scope == "all":
        return bool(record.perturbations)
    drift = scope.endswith(DRIFT)
    return record.tier == scope.removesuffix(DRIFT) and record.drift == drift


def paired_delta(report: Report, baseline: Report, scope: str) -> PairedDelta | None:
    """``report``'s success minus ``baseline``'s on the baseline's cases of ``scope`` that ``report`` holds too,
    as Newcombe's paired difference; for ``clean``, each task's clean twin once. ``None`` where no case pairs."""
    mine = {r.case: r for r in report.records}
    base = [r for r in baseline.records if r.case in mine and in_scope(r, scope)]
    if scope == "clean":
        twins = {r.task: r for r in base}
        pairs = [(mine[r.case].clean_success, r.clean_success) for r in twins.values()]
    else:
        pairs = [(mine[r.case].success, r.success) for r in base]
    return PairedDelta.of(pairs) if pairs else None
