"""Gates: criteria on a report (``perception.delta>=-10``) and comparison against a baseline report.

A criterion is ``SCOPE.METRIC OP NUMBER``. SCOPE is ``clean`` (the clean twins), ``all``, a tier
or a perturbation name; METRIC is ``success``, ``clean``, ``refusal`` or ``tool_errors`` (fractions
from 0 to 1), ``delta`` (percentage points) or ``episodes``; OP is one of ``>= <= > < ==``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sandbox.domain import did_you_mean
from sandbox.errors import UsageError
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.evaluation.report import Report

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt,
}  # fmt: skip
METRICS = ("success", "clean", "delta", "refusal", "tool_errors", "episodes")
ALIASES = {"tool_error": "tool_errors", "tool_error_rate": "tool_errors", "refusal_rate": "refusal",
           "clean_success": "clean", "success_rate": "success"}  # fmt: skip
FIXED_SCOPES = ("clean", "all", *TIERS)
_CRITERION = re.compile(r"^(?P<scope>[\w-]+)\.(?P<metric>\w+)(?P<op>>=|<=|==|>|<)(?P<value>.+)$")
EXAMPLE = "clean.success>=0.95 perception.delta>=-10 internalization.refusal>=0.9"


class GateError(UsageError):
    """A malformed gate; the message names the criterion and says how to write it."""


@dataclass(frozen=True)
class Criterion:
    scope: str
    metric: str
    op: str
    threshold: float
    text: str

    def holds(self, value: float) -> bool:
        return OPS[self.op](value, self.threshold)


@dataclass
class GateResult:
    """What a gate checked: ``ok`` when no criterion failed; ``failures`` say what was measured."""

    checked: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def __bool__(self) -> bool:
        return self.ok

    def message(self) -> str:
        if self.ok:
            return f"openagent gate passed ({len(self.checked)} criteria)"
        return "openagent gate failed:\n" + "\n".join(f"  {f}" for f in self.failures)


def parse_gate(gate: str | Iterable[str], known_scopes: Iterable[str] | None = None) -> list[Criterion]:
    """Criteria from ``"a.success>=0.9, b.delta >= -10"`` or a list of such strings."""
    text = gate if isinstance(gate, str) else " ".join(gate)
    text = re.sub(r"\s*(>=|<=|==|>|<)\s*", r"\1", text)
    parts = [p for p in re.split(r"[\s,;]+", text) if p]
    if not parts:
        raise GateError(f"the gate is empty; write criteria such as {EXAMPLE!r}")
    criteria = []
    for part in parts:
        m = _CRITERION.match(part)
        if m is None:
            raise GateError(f"{part!r} is not a criterion; write SCOPE.METRIC OP NUMBER, e.g. {EXAMPLE!r}")
        metric = ALIASES.get(m["metric"], m["metric"])
        if metric not in METRICS:
            raise GateError(f"{part!r}: {did_you_mean('metric', m['metric'], list(METRICS))}")
        try:
            threshold = float(m["value"])
        except ValueError:
            raise GateError(f"{part!r}: {m['value']!r} is not a number") from None
        if known_scopes is not None and m["scope"] not in FIXED_SCOPES and m["scope"] not in set(known_scopes):
            known = [*FIXED_SCOPES, *known_scopes]
            raise GateError(f"{part!r}: {did_you_mean('scope', m['scope'], known)}")
        criteria.append(Criterion(m["scope"], metric, m["op"], threshold, part))
    return criteria


def _fmt(metric: str, value: float) -> str:
    if metric == "delta":
        return f"{value:+.1f} points"
    if metric == "episodes":
        return f"{value:.0f}"
    return f"{value:.3f}"


def check(report: Report, criteria: Iterable[Criterion]) -> GateResult:
    result = GateResult()
    rows = {row.scope: row for row in report.rows()}
    for c in criteria:
        result.checked.append(c.text)
        row = rows.get(c.scope)
        if row is None or (row.episodes == 0 and c.metric != "episodes"):
            result.failures.append(f"{c.text}: no episodes measured for {c.scope!r}")
            continue
        value = row.value(c.metric)
        denominator = {"refusal": row.refusal.n, "tool_errors": row.tool_errors.n}.get(c.metric, row.episodes)
        if value != value:  # nan: nothing to measure (no unsolvable case, no tool call)
            result.failures.append(f"{c.text}: nothing to measure ({c.metric} needs cases it has none of)")
        elif not c.holds(value):
            result.failures.append(f"{c.text}: measured {_fmt(c.metric, value)} (n={denominator})")
    return result


def compare(report: Report, baseline: Report, max_regression: float) -> GateResult:
    """Each scope of the baseline (clean, tiers, all) must lose at most ``max_regression`` points of success."""
    result = GateResult()
    current = {row.scope: row for row in report.rows() if row.kind != "perturbation"}
    for base in baseline.rows():
        row = current.get(base.scope)
        if base.kind == "perturbation" or row is None or base.perturbed.n == 0 or row.perturbed.n == 0:
            continue
        now, then = 100 * row.perturbed.value, 100 * base.perturbed.value
        result.checked.append(base.scope)
        if then - now > max_regression:
            result.failures.append(
                f"{base.scope}: success {now:.1f}% vs baseline {then:.1f}% "
                f"({now - then:+.1f} points; at most -{max_regression:g} allowed)"
            )
    return result
