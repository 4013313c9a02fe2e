"""Two reports on the same cases compared case by case: per scope, the paired difference in success."""

from __future__ import annotations

from typing import Any

from sandbox.evaluation.pairing import paired_delta
from training.figure import SCOPES


def paired(report: Any, baseline: Any) -> dict[str, Any]:
    """``report``'s success minus ``baseline``'s on the same cases, per scope (clean: the clean twins; a tier:
    its perturbed cases; :func:`sandbox.evaluation.pairing.paired_delta`, the gate's pairing), and
    ``"refusal"``: refusals on tier 4's unsolvable cases; as Newcombe's paired difference
    (:class:`~sandbox.metrics.PairedDelta`)."""
    from sandbox.metrics import PairedDelta

    out: dict[str, Any] = {}
    for scope, _ in SCOPES:
        delta = paired_delta(report, baseline, scope)
        if delta is not None:
            out[scope] = delta
    mine = {r.case: r for r in report.records}
    unsolvable = [r for r in baseline.records if r.case in mine and r.tier == "internalization" and not r.solvable
                  and not mine[r.case].solvable]  # fmt: skip
    if unsolvable:
        out["refusal"] = PairedDelta.of((mine[r.case].outcome == "refused", r.outcome == "refused") for r in unsolvable)
    return out
