"""Detection apart from recovery: per perturbation, how often the agent noticed a fault, recovered from it, or went
on as if nothing had happened, each with its Wilson interval.

A record says what was noticed where its case scores it (``Record.noticed``): for faults of the agent's own model,
whether the agent's loop asked its model again after the last fault the LLM proxy injected
(``Episode.model_faults``). Recovered is the episode's success; went on is neither.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from sandbox.metrics import Rate


class Record(Protocol):
    tier: str | None
    perturbations: tuple[str, ...]
    success: bool
    noticed: bool | None


@dataclass(frozen=True)
class Detection:
    """One tier's or one perturbation's episodes that score detection: noticed, recovered, went on (each a rate of
    ``n``); ``kind`` is ``tier`` or ``perturbation``."""

    name: str
    kind: str
    noticed: Rate
    recovered: Rate
    went_on: Rate

    def to_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            low, high = r.interval
            return {"k": r.k, "n": r.n, "value": r.value, "low": low, "high": high}

        return {"name": self.name, "kind": self.kind, "noticed": rate(self.noticed), "recovered": rate(self.recovered),
                "went_on": rate(self.went_on)}  # fmt: skip


def detection(records: Iterable[Record]) -> list[Detection]:
    """Per tier, each followed by its perturbations (each of a stack's) in name order, over the records that score
    detection."""
    scored = [r for r in records if r.noticed is not None]
    out = []
    for tier in sorted({r.tier or "" for r in scored}):
        in_tier = [r for r in scored if (r.tier or "") == tier]
        out.append(_rates(tier or "none", "tier", in_tier))
        by_name: dict[str, list[Record]] = defaultdict(list)
        for record in in_tier:
            for name in dict.fromkeys(record.perturbations):
                by_name[name].append(record)
        out += [_rates(name, "perturbation", group) for name, group in sorted(by_name.items())]
    return out


def _rates(name: str, kind: str, group: list[Record]) -> Detection:
    n = len(group)
    noticed = sum(bool(r.noticed) for r in group)
    recovered = sum(r.success for r in group)
    went_on = sum(not r.noticed and not r.success for r in group)
    return Detection(name, kind, Rate(noticed, n), Rate(recovered, n), Rate(went_on, n))


def detection_table(rows: list[Detection]) -> str:
    """The rows as text: each rate as a percentage, its count and its 95% interval."""
    from tabulate import tabulate

    def cell(r: Rate) -> str:
        low, high = r.interval
        return f"{100 * r.value:.1f}% ({r.k}/{r.n}) [{100 * low:.1f}, {100 * high:.1f}]"

    table = [[("  " if d.kind == "perturbation" else "") + d.name, d.noticed.n, cell(d.noticed), cell(d.recovered),
              cell(d.went_on)] for d in rows]  # fmt: skip
    headers = ["scope", "episodes", "noticed", "recovered", "went on"]
    try:
        return tabulate(table, headers=headers, disable_numparse=True, preserve_whitespace=True)
    except TypeError:  # tabulate < 0.10 strips the indent of perturbation rows
        return tabulate(table, headers=headers, disable_numparse=True)
