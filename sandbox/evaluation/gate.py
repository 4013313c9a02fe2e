"""Gates: criteria on a report (``perception.delta>=-10``) and a paired comparison against a baseline report.

A criterion is ``SCOPE.METRIC OP NUMBER``. SCOPE is ``clean`` (the clean twins), ``all``, a tier
or a perturbation name; METRIC is ``success``, ``clean``, ``refusal`` (unsolvable cases refused),
``wrong_refusal`` (solvable cases refused), ``repeated_write`` (cases with a write done more often than
the gold plan does it), ``tool_errors``, ``deceived`` (cases whose agent reported or acted on a wrong value a
tool told) or ``noticed`` (of the cases that met a fault of interaction, those whose agent noticed it: see
:mod:`sandbox.evaluation.detection`) (fractions from 0 to 1), ``delta``
(percentage points, perturbed minus clean on the same tasks) or ``episodes``; OP is one of
``>= <= > <``.

Every verdict comes from the 95% interval of the metric, not from its point value: a criterion
PASSes when the whole interval clears the threshold, FAILs when the whole interval lies beyond it,
and is INCONCLUSIVE otherwise (more cases narrow the interval). ``episodes`` is a count, so it is
compared exactly.

``worst.TIER.success`` reads the worst case a worst-case search found in TIER (``--openagent-search worst``,
``openagent eval --worst N``): the success rate of its shrunk stack re-run on the other tasks of its task's
family, with its Wilson interval. ``worst.perception.success>=0.5`` PASSes when even the stack that hurt the
agent most in perception leaves it solving at least half of that family's tasks, with 95% confidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sandbox.errors import UsageError, did_you_mean
from sandbox.evaluation.criterion import Check, Criterion, Verdict
from sandbox.evaluation.pairing import paired_delta
from sandbox.evaluation.report import DRIFT
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.evaluation.report import Report
    from sandbox.evaluation.worst_case import WorstCase

OPS = (">=", "<=", ">", "<")
METRICS = ("success", "clean", "delta", "refusal", "wrong_refusal", "repeated_write", "tool_errors", "deceived",
           "noticed", "episodes")  # fmt: skip
ALIASES = {"tool_error": "tool_errors", "tool_error_rate": "tool_errors", "refusal_rate": "refusal",
           "clean_success": "clean", "success_rate": "success", "over_refusal": "wrong_refusal",
           "refused_solvable": "wrong_refusal", "repeated_writes": "repeated_write"}  # fmt: skip
FIXED_SCOPES = ("clean", "all", *TIERS, *(tier + DRIFT for tier in TIERS))
_CRITERION = re.compile(r"^(?P<scope>(?:worst\.)?[\w-]+)\.(?P<metric>\w+)(?P<op>>=|<=|==|>|<)(?P<value>.+)$")
WORST = "worst."
"""A scope ``worst.TIER`` reads the worst case a search found in TIER: the success of its shrunk stack on the other
tasks of its family (:class:`~sandbox.evaluation.worst_case.WorstCase`); ``success`` and ``episodes`` only."""
WORST_METRICS = ("success", "episodes")
EXAMPLE = "clean.success>=0.95 perception.delta>=-10 internalization.refusal>=0.9"
DEFAULT_GATE = "clean.success>=0.8 all.delta>=-20 clean.wrong_refusal<=0.1 internalization.refusal>=0.8"
"""What ``--gate default`` checks: clean skill, robustness, and both sides of refusing (so that an agent
that refuses everything cannot pass)."""
DEFAULT_MARGIN = 5.0
"""Points of success a scope may lose against a baseline before the comparison fails."""


class GateError(UsageError):
    """A malformed gate; the message names the criterion and says how to write it."""


@dataclass
class GateResult:
    """What a gate checked. ``verdict`` is FAIL if any check failed, else INCONCLUSIVE if any was, else PASS."""

    checks: list[Check] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        verdicts = {c.verdict for c in self.checks}
        return "FAIL" if "FAIL" in verdicts else "INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS"

    @property
    def ok(self) -> bool:
        return self.verdict == "PASS"

    def __bool__(self) -> bool:
        return self.ok

    @property
    def checked(self) -> list[str]:
        return [c.text for c in self.checks]

    @property
    def failures(self) -> list[str]:
        return [str(c) for c in self.checks if c.verdict == "FAIL"]

    @property
    def inconclusive(self) -> list[str]:
        return [str(c) for c in self.checks if c.verdict == "INCONCLUSIVE"]

    def __add__(self, other: GateResult) -> GateResult:
        return GateResult(self.checks + other.checks)

    def message(self) -> str:
        lines = [f"openagent gate {self.verdict} ({len(self.checks)} checks)"]
        lines += [f"  {c.verdict:<12} {c}" for c in self.checks]
        return "\n".join(lines)


def parse_gate(gate: str | Iterable[str], known_scopes: Iterable[str] | None = None) -> list[Criterion]:
    """Criteria from ``"a.success>=0.9, b.delta >= -10"``, a list of such strings, or ``"default"``."""
    text = gate if isinstance(gate, str) else " ".join(gate)
    if text.strip() == "default":
        text = DEFAULT_GATE
    text = re.sub(r"\s*(>=|<=|==|>|<)\s*", r"\1", text)
    parts = [p for p in re.split(r"[\s,;]+", text) if p]
    if not parts:
        raise GateError(f"the gate is empty; write criteria such as {EXAMPLE!r}, or 'default' ({DEFAULT_GATE!r})")
    criteria = []
    for part in parts:
        m = _CRITERION.match(part)
        if m is None:
            raise GateError(f"{part!r} is not a criterion; write SCOPE.METRIC OP NUMBER, e.g. {EXAMPLE!r}")
        if m["op"] == "==":
            raise GateError(f"{part!r}: an interval cannot show equality; use >= or <= (e.g. {EXAMPLE!r})")
        metric = ALIASES.get(m["metric"], m["metric"])
        if metric not in METRICS:
            raise GateError(f"{part!r}: {did_you_mean('metric', m['metric'], list(METRICS))}")
        try:
            threshold = float(m["value"])
        except ValueError:
            raise GateError(f"{part!r}: {m['value']!r} is not a number") from None
        if not math.isfinite(threshold):
            raise GateError(f"{part!r}: the threshold must be a finite number, got {m['value']!r}")
        if m["scope"].startswith(WORST):
            tier = m["scope"].removeprefix(WORST)
            if tier not in TIERS:
                raise GateError(f"{part!r}: worst.TIER names a tier; {did_you_mean('tier', tier, list(TIERS))}")
            if metric not in WORST_METRICS:
                raise GateError(f"{part!r}: a worst case is gated on {' or '.join(WORST_METRICS)}, not {metric!r}")
        elif known_scopes is not None and m["scope"] not in FIXED_SCOPES and m["scope"] not in set(known_scopes):
            known = [*FIXED_SCOPES, *known_scopes]
            raise GateError(f"{part!r}: {did_you_mean('scope', m['scope'], known)}")
        criteria.append(Criterion(m["scope"], metric, m["op"], threshold, part))
    return criteria


def check_margin(margin: float | str) -> float:
    """A non-inferiority margin in points: a finite number from 0 to 100."""
    try:
        if isinstance(margin, bool):
            raise TypeError(margin)
        value = float(margin)
    except (TypeError, ValueError):
        raise UsageError(f"the margin must be a number of points (e.g. 5), got {margin!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise UsageError(f"the margin must be a number of points from 0 to 100 (e.g. 5), got {margin!r}")
    return value


def _fmt(metric: str, value: float) -> str:
    if metric == "delta":
        return f"{value:+.1f} points"
    if metric == "episodes":
        return f"{value:.0f}"
    return f"{value:.3f}"


def criteria_of(gate: str | Iterable[str | Criterion]) -> list[Criterion]:
    """Criteria from a gate's text, a list of texts or of parsed criteria."""
    if isinstance(gate, str):
        return parse_gate(gate)
    return [c for part in gate for c in ([part] if isinstance(part, Criterion) else parse_gate(part))]


def check(report: Report, gate: str | Iterable[str | Criterion]) -> GateResult:
    """Check a gate on a report: criteria such as ``"clean.success>=0.95 perception.delta>=-10"``, a
    list of such texts, or parsed criteria (:func:`parse_gate`); raises :class:`GateError` if malformed.
    A report of a sequential run (``evaluate(sequential=...)``) is read as it ran
    (:mod:`sandbox.evaluation.sequential`)."""
    criteria = criteria_of(gate)
    if report.meta.get("sequential"):  # stopped early: only the confidence sequence may read it
        from sandbox.evaluation.sequential import check_sequential

        return GateResult(check_sequential(report, criteria, lambda part, c: check(part, [c]).checks[0]))
    result = GateResult()
    rows = {row.scope: row for row in report.rows()}
    worst = {WORST + w.tier: w for w in report.worst}
    for c in criteria:
        if c.scope.startswith(WORST):
            result.checks.append(_check_worst(c, worst.get(c.scope)))
            continue
        row = rows.get(c.scope)
        if row is None or (row.episodes == 0 and c.metric != "episodes"):
            result.checks.append(Check(c.text, "FAIL", f"no episodes measured for {c.scope!r}"))
            continue
        value, low, high, n = row.estimate(c.metric)
        if n == 0 or math.isnan(value):
            result.checks.append(Check(c.text, "FAIL", f"nothing to measure ({c.metric} needs cases it has none of)"))
            continue
        interval = "" if c.metric == "episodes" else f" [{_fmt(c.metric, low)}, {_fmt(c.metric, high)}]"
        verdict = c.verdict(low, high)
        result.checks.append(Check(c.text, verdict, f"measured {_fmt(c.metric, value)}{interval} (n={n})"))
    return result


def _check_worst(c: Criterion, worst: WorstCase | None) -> Check:
    if worst is None:
        return Check(c.text, "FAIL", "no worst-case search of this tier in the report (run it with "
                     "--openagent-search worst, or openagent eval --worst N)")  # fmt: skip
    rate = worst.neighbourhood
    if c.metric == "episodes":
        return Check(c.text, c.verdict(rate.n, rate.n), f"measured {rate.n} (its stack's neighbourhood)")
    if rate.n == 0:
        return Check(c.text, "FAIL", f"the worst case {worst.shrunk or worst.case} has no neighbourhood measured")
    low, high = rate.interval
    detail = (
        f"measured {rate.value:.3f} [{low:.3f}, {high:.3f}] (n={rate.n}): {worst.shrunk or worst.case} "
        f"re-run on other {worst.family} tasks"
    )
    return Check(c.text, c.verdict(low, high), detail)


COVERAGE = ("domain", "split", "pool", "seed", "n", "tiers", "names", "families", "max_stack", "sandbox_version")
"""The report metadata that decides which cases were drawn, named when a report misses a baseline's cases."""


def coverage_differences(report: Report, baseline: Report) -> list[str]:
    """Why ``report`` lacks cases of the baseline, in words; empty when it holds them all (it may hold more)."""
    cases = {r.case for r in report.records}
    missing = [r for r in baseline.records if r.case not in cases]
    if not missing:
        return []
    out = [f"{key}: {report.meta.get(key)!r} here, {baseline.meta.get(key)!r} in the baseline" for key in COVERAGE
           if report.meta.get(key) != baseline.meta.get(key)]  # fmt: skip
    tiers = sorted({r.tier or "clean" for r in missing})
    names = sorted({n for r in missing for n in r.perturbations})
    out.append(
        f"{len(missing)} of the baseline's {len(baseline.records)} cases are not in this report "
        f"(tiers: {', '.join(tiers)}; perturbations: {', '.join(names) or 'none'})"
    )
    return out


def compare(report: Report, baseline: Report, margin: float = DEFAULT_MARGIN) -> GateResult:
    """Non-inferiority on the baseline's own cases: for ``clean``, each tier and ``all``, the paired
    difference in success (this report minus the baseline) must stay above ``-margin`` points.

    The report must hold every case of the baseline (it may hold more): one that covers less (other
    tiers, perturbations, domain, seed or n) fails, naming what differs.
    """
    margin = check_margin(margin)
    result = GateResult()
    differences = coverage_differences(report, baseline)
    if differences:
        result.checks.append(Check("baseline", "FAIL", "the reports cover different cases: " + "; ".join(differences)))
        return result
    for row in baseline.rows():
        if row.kind == "perturbation":
            continue
        diff = paired_delta(report, baseline, row.scope)
        if diff is None:
            continue
        low, high = diff.interval
        verdict: Verdict = "PASS" if low > -margin else "FAIL" if high < -margin else "INCONCLUSIVE"
        detail = (
            f"success {100 * diff.a.value:.1f}% vs baseline {100 * diff.b.value:.1f}% on the same {diff.n} cases: "
            f"{diff} points (at most -{margin:g} allowed)"
        )
        result.checks.append(Check(f"baseline {row.scope}", verdict, detail))
    return result
