"""Two reports on the same cases compared case by case: per scope, the paired difference in success."""

from __future__ import annotations

from typing import Any

from training.figure import SCOPES


def paired(report: Any, baseline: Any) -> dict[str, Any]:
    """``report``'s success minus ``baseline``'s on the same cases, per scope (clean: the clean twins; a tier:
    its perturbed cases), and ``"refusal"``: refusals on tier 4's unsolvable cases; as Newcombe's paired
    difference (:class:`~sandbox.metrics.PairedDelta`)."""
    from sandbox.metrics import PairedDelta

    mine = {r.case: r for r in report.records}
    common = [r for r in baseline.records if r.case in mine]
    out: dict[str, Any] = {}
    for scope, _ in SCOPES:
        if scope == "clean":
            twins = {r.task: r for r in common}
            pairs = [(mine[r.case].clean_success, r.clean_success) for r in twins.values()]
        else:
            pairs = [(mine[r.case].success, r.success) for r in common if r.tier == scope]
        if pairs:
            out[scope] = PairedDelta.of(pairs)
    unsolvable = [r for r in common if r.tier == "internalization" and not r.solvable and not mine[r.case].solvable]
    if unsolvable:
        out["refusal"] = PairedDelta.of((mine[r.case].outcome == "refused", r.outcome == "refused") for r in unsolvable)
    return out
