"""The robustness report: one record per episode, figures per tier and per perturbation.

A record pairs a perturbed episode with its clean twin, so Δ compares the same tasks. The report
sorts its records, so the same episodes give the same figures whatever order they arrived in
(serially or from pytest-xdist workers).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.metrics import Delta, Rate
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.episode import Episode
    from sandbox.evaluation.gate import GateResult

SCHEMA = "pytest-openagent/report"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Record:
    """What the report keeps of one perturbed episode and its clean twin (plain data: JSON and xdist-safe)."""

    test: str
    agent: str
    case: str
    label: str
    task: str
    family: str
    n_calls: int
    perturbations: tuple[str, ...]
    tier: str | None
    solvable: bool
    outcome: str
    success: bool
    tool_errors: int
    calls: int
    clean_outcome: str
    clean_success: bool
    clean_solvable: bool
    clean_tool_errors: int
    clean_calls: int

    @classmethod
    def of(cls, test: str, agent: str, case: Case, episode: Episode, clean: Episode) -> Record:
        tiers = [p.tier for p in case.perturbations]
        return cls(
            test=test, agent=agent, case=case.key(), label=case.describe(), task=case.task.id,
            family=case.task.family, n_calls=case.task.n_calls,
            perturbations=tuple(p.name for p in case.perturbations),
            tier=max(tiers, key=TIERS.index) if tiers else None,
            solvable=_solvable(case, episode), outcome=episode.outcome, success=episode.success,
            tool_errors=episode.tool_errors, calls=len(episode.calls),
            clean_outcome=clean.outcome, clean_success=clean.success, clean_solvable=case.task.solvable,
            clean_tool_errors=clean.tool_errors, clean_calls=len(clean.calls),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["perturbations"] = list(self.perturbations)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        return cls(**{**data, "perturbations": tuple(data["perturbations"])})

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.test, self.agent, self.case)


@dataclass(frozen=True)
class Row:
    """The figures of one scope: a tier, a perturbation, ``clean`` (the clean twins) or ``all``."""

    scope: str
    kind: str
    episodes: int
    clean: Rate
    perturbed: Rate
    tool_errors: Rate
    refusal: Rate

    @property
    def delta(self) -> Delta:
        return Delta(self.perturbed, self.clean)

    def value(self, metric: str) -> float:
        """A gate metric: ``success``, ``clean``, ``refusal`` and ``tool_errors`` as fractions, ``delta`` in points."""
        if metric == "delta":
            return self.delta.points if self.kind != "clean" else 0.0
        if metric == "episodes":
            return float(self.episodes)
        rates = {"success": self.perturbed, "clean": self.clean, "refusal": self.refusal}
        rates["tool_errors"] = self.tool_errors
        return rates[metric].value

    def to_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            low, high = r.interval
            return {"k": r.k, "n": r.n, "value": _num(r.value), "low": _num(low), "high": _num(high)}

        low, high = self.delta.interval
        return {
            "scope": self.scope, "kind": self.kind, "episodes": self.episodes,
            "clean": rate(self.clean), "success": rate(self.perturbed),
            "delta": {"points": _num(self.delta.points), "low": _num(low), "high": _num(high)},
            "tool_errors": rate(self.tool_errors), "refusal": rate(self.refusal),
        }  # fmt: skip


def _solvable(case: Case, episode: Episode) -> bool:
    solvable = getattr(episode, "solvable", None)
    return case.solvable if solvable is None else bool(solvable)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _row(scope: str, kind: str, records: list[Record]) -> Row:
    if kind == "clean":
        twins = list({r.task: r for r in records}.values())
        success = Rate(sum(r.clean_success for r in twins), len(twins))
        unsolvable = [r for r in twins if not r.clean_solvable]
        return Row(
            scope, kind, len(twins), success, success,
            Rate(sum(r.clean_tool_errors for r in twins), sum(r.clean_calls for r in twins)),
            Rate(sum(r.clean_outcome == "refused" for r in unsolvable), len(unsolvable)),
        )  # fmt: skip
    unsolvable = [r for r in records if not r.solvable]
    return Row(
        scope, kind, len(records),
        Rate(sum(r.clean_success for r in records), len(records)),
        Rate(sum(r.success for r in records), len(records)),
        Rate(sum(r.tool_errors for r in records), sum(r.calls for r in records)),
        Rate(sum(r.outcome == "refused" for r in unsolvable), len(unsolvable)),
    )  # fmt: skip


@dataclass
class Report:
    """Figures over a set of records. Built by the pytest session, by ``evaluate`` or from JSON."""

    records: list[Record]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unique = {r.identity: r for r in self.records}
        self.records = sorted(unique.values(), key=lambda r: r.identity)

    @property
    def perturbed(self) -> list[Record]:
        return [r for r in self.records if r.perturbations]

    def rows(self) -> list[Row]:
        """``clean``, then each tier followed by its perturbations, then ``all``."""
        if not self.records:
            return []
        rows = [_row("clean", "clean", self.records)]
        perturbed = self.perturbed
        for tier in TIERS:
            in_tier = [r for r in perturbed if r.tier == tier]
            if not in_tier:
                continue
            rows.append(_row(tier, "tier", in_tier))
            names = dict.fromkeys(n for r in in_tier for n in r.perturbations)
            rows += [_row(n, "perturbation", [r for r in in_tier if n in r.perturbations]) for n in names]
        if perturbed:
            rows.append(_row("all", "all", perturbed))
        return rows

    def row(self, scope: str) -> Row | None:
        return next((r for r in self.rows() if r.scope == scope), None)

    def table(self) -> str:
        from tabulate import tabulate

        def pct(rate: Rate) -> str:
            return "-" if rate.n == 0 else f"{rate.value:.1%}"

        body = []
        for row in self.rows():
            indent = "  " if row.kind == "perturbation" else ""
            delta = "" if row.kind == "clean" else str(row.delta)
            clean = pct(row.clean)
            success = "" if row.kind == "clean" else pct(row.perturbed)
            refusal = "-" if row.refusal.n == 0 else f"{row.refusal.value:.1%} ({row.refusal.k}/{row.refusal.n})"
            body.append([indent + row.scope, row.episodes, clean, success, delta, pct(row.tool_errors), refusal])
        headers = ["scope", "episodes", "clean", "perturbed", "Δ points [95% CI]", "tool errors", "refusal"]
        try:
            return tabulate(body, headers=headers, disable_numparse=True, preserve_whitespace=True)
        except TypeError:  # tabulate < 0.10 strips the indent of perturbation rows
            return tabulate(body, headers=headers, disable_numparse=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "meta": self.meta,
            "rows": [r.to_dict() for r in self.rows()],
            "records": [r.to_dict() for r in self.records],
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text + "\n")
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        if data.get("schema") != SCHEMA or not isinstance(data.get("schema_version"), int):
            raise ValueError(f"not a pytest-openagent report (expected schema {SCHEMA!r}, got {data.get('schema')!r})")
        if data["schema_version"] > SCHEMA_VERSION:
            raise ValueError(
                f"report schema version {data['schema_version']} is newer than this pytest-openagent "
                f"reads ({SCHEMA_VERSION}); upgrade pytest-openagent"
            )
        return cls([Record.from_dict(r) for r in data.get("records", [])], dict(data.get("meta", {})))

    @classmethod
    def load(cls, path: str | Path) -> Report:
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise ValueError(f"cannot read report {str(path)!r}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"report {str(path)!r} is not JSON: {exc}") from None
        return cls.from_dict(data)

    def check(self, gate: str | Iterable[str]) -> GateResult:
        """Check a gate such as ``"clean.success>=0.95 perception.delta>=-10"``; raises ``GateError`` if malformed."""
        from sandbox.evaluation.gate import check, parse_gate

        return check(self, parse_gate(gate))

    def compare(self, baseline: Report, max_regression: float = 5.0) -> GateResult:
        """Fail where a tier's (or the clean) success is over ``max_regression`` points below the baseline's."""
        from sandbox.evaluation.gate import compare

        return compare(self, baseline, max_regression)

    def __str__(self) -> str:
        return self.table()
