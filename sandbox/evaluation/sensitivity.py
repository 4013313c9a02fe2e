"""Sensitivity curves: success against severity for each perturbation (a dose-response table).

Read from a report's records: each perturbation's cases grouped by the severity it had in them, with
severity 0 for the clean twins of the same tasks, so that every curve starts from the agent's own
clean skill on the tasks it was measured on. A case that stacks several perturbations counts for each
of them, at its own severity (the fixed sample stacks none unless ``max_stack`` is above 1). Cases where a
perturbation starts mid-episode (drift, ``after`` above 0) make a curve of their own, ``name (drift)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from sandbox.metrics import Rate


class Record(Protocol):
    """What a curve reads of a report's record (:class:`sandbox.evaluation.report.Record`, which imports this)."""

    @property
    def task(self) -> str: ...
    @property
    def tier(self) -> str | None: ...
    @property
    def success(self) -> bool: ...
    @property
    def clean_success(self) -> bool: ...
    @property
    def stack(self) -> tuple[dict[str, Any], ...]: ...


CLEAN_SEVERITY = 0
"""The severity the clean twins stand at on every curve."""
DRIFT = "(drift)"
"""What a perturbation's name is followed by on the curve of its cases with an onset (``after`` above 0)."""


@dataclass(frozen=True)
class Dose:
    """The success of one perturbation's cases at one severity (``CLEAN_SEVERITY``: their clean twins)."""

    perturbation: str
    tier: str | None
    severity: int
    success: Rate

    def to_dict(self) -> dict[str, Any]:
        low, high = self.success.interval
        return {
            "perturbation": self.perturbation, "tier": self.tier, "severity": self.severity, "k": self.success.k,
            "n": self.success.n, "value": _num(self.success.value), "low": _num(low), "high": _num(high),
        }  # fmt: skip


def _num(x: float) -> float | None:
    return None if x != x else round(x, 6)


def sensitivity(records: Iterable[Record]) -> list[Dose]:
    """The dose-response points of every perturbation in ``records``: by tier and first appearance, each curve
    from its clean twins (severity 0) up through the severities its cases had."""
    from sandbox.perturbations.base import TIERS

    by_name: dict[str, dict[int, list[Record]]] = {}
    tier_of: dict[str, str | None] = {}
    for record in records:
        for spec in record.stack:
            name = str(spec.get("name"))
            severity = spec.get("severity")
            if not isinstance(severity, int):
                continue
            curve = f"{name} {DRIFT}" if spec.get("after") else name
            by_name.setdefault(curve, {}).setdefault(severity, []).append(record)
            tier_of.setdefault(curve, _tier(name, record))
    order = sorted(by_name, key=lambda n: TIERS.index(tier_of[n]) if tier_of[n] in TIERS else len(TIERS))
    out: list[Dose] = []
    for name in order:
        levels = by_name[name]
        twins = {r.task: r.clean_success for rs in levels.values() for r in rs}
        out.append(Dose(name, tier_of[name], CLEAN_SEVERITY, Rate(sum(twins.values()), len(twins))))
        for severity in sorted(s for s in levels if s != CLEAN_SEVERITY):
            cases = levels[severity]
            out.append(Dose(name, tier_of[name], severity, Rate(sum(r.success for r in cases), len(cases))))
    return out


def _tier(name: str, record: Record) -> str | None:
    """The tier a perturbation is registered in; a report read where it is not registered (a user's
    perturbation) gives the tier of the case it was in."""
    from sandbox.errors import UnknownName
    from sandbox.perturbations import registry

    try:
        return registry.get(name).tier
    except UnknownName:
        return record.tier


def curves(doses: Iterable[Dose]) -> dict[str, list[Dose]]:
    """The points by perturbation, in order."""
    out: dict[str, list[Dose]] = {}
    for dose in doses:
        out.setdefault(dose.perturbation, []).append(dose)
    return out


def sensitivity_table(doses: list[Dose]) -> str:
    """The dose-response table as text: a row per perturbation, a column per severity (``s=0`` the clean twins)."""
    from tabulate import tabulate

    by_name = curves(doses)
    if not by_name:
        return ""
    severities = sorted({d.severity for d in doses})
    body = []
    for name, points in by_name.items():
        at = {d.severity: d.success for d in points}
        cells = ["" if s not in at else f"{at[s].value:.0%} ({at[s].k}/{at[s].n})" for s in severities]
        body.append([name, points[0].tier or "-", *cells])
    headers = ["perturbation", "tier", *[f"s={s}" + (" clean" if s == CLEAN_SEVERITY else "") for s in severities]]
    return tabulate(body, headers=headers, disable_numparse=True)
