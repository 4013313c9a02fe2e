"""Metrics over episodes: rates with Wilson intervals, Δ against clean twins, pass^k."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sandbox.errors import UsageError

if TYPE_CHECKING:
    from sandbox.episode import Episode

Z95 = 1.959964


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n``, with its 95% Wilson score interval."""

    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def interval_at(self, z: float) -> tuple[float, float]:
        """The Wilson interval of another level: ``z`` is its two-sided normal quantile."""
        return wilson(self.k, self.n, z)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.value:.1%} [{low:.1%}, {high:.1%}] ({self.k}/{self.n})"


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (12.706 for 1, 2.201 for 11).

    Computed by bisection on the density's integral (Simpson's rule) rather than taken from scipy, which the
    plugin does not otherwise need."""
    if df < 1:
        raise UsageError(f"t95 needs at least 1 degree of freedom, got {df}")
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def mass(x: float, n: int = 400) -> float:  # the density's integral from 0 to x
        h = x / n
        f: list[float] = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
        return h / 3 * (f[0] + f[n] + 4 * sum(f[1:n:2]) + 2 * sum(f[2:n:2]))

    low, high = 0.0, Z95
    while mass(high) < 0.475:
        high *= 2
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if mass(mid) < 0.475 else (low, mid)
    return (low + high) / 2


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion; (nan, nan) for n = 0."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Delta:
    """Perturbed minus clean success, in percentage points, with Newcombe's hybrid interval."""

    perturbed: Rate
    clean: Rate

    @property
    def points(self) -> float:
        return 100 * (self.perturbed.value - self.clean.value)

    @property
    def interval(self) -> tuple[float, float]:
        (l1, u1), (l2, u2) = self.perturbed.interval, self.clean.interval
        p1, p2 = self.perturbed.value, self.clean.value
        low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        high = p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
        return (100 * low, 100 * high)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.points:+.1f} [{low:+.1f}, {high:+.1f}]"


@dataclass(frozen=True)
class PairedDelta:
    """Success of A minus success of B on the same cases, in points, with Newcombe's paired interval.

    ``both`` cases succeed under A and B, ``only_a`` under A alone, ``only_b`` under B alone and
    ``neither`` under neither. The interval is Newcombe's method 10 (1998): Wilson intervals of the two
    rates combined with the correlation of the pairs, so it is narrower than the unpaired one when
    outcomes agree case by case, which is what a clean twin or a baseline on the same cases gives.
    """

    both: int
    only_a: int
    only_b: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def a(self) -> Rate:
        return Rate(self.both + self.only_a, self.n)

    @property
    def b(self) -> Rate:
        return Rate(self.both + self.only_b, self.n)

    @property
    def points(self) -> float:
        return 100 * (self.only_a - self.only_b) / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return self.interval_at(Z95)

    def interval_at(self, z: float) -> tuple[float, float]:
        """The interval of another level: ``z`` is the two-sided normal quantile of its Wilson intervals."""
        if not self.n:
            return (float("nan"), float("nan"))
        (l1, u1), (l2, u2) = self.a.interval_at(z), self.b.interval_at(z)
        p1, p2 = self.a.value, self.b.value
        margins = (self.both + self.only_a) * (self.only_b + self.neither) * (self.both + self.only_b)
        margins *= self.only_a + self.neither
        cross: float = self.both * self.neither - self.only_a * self.only_b
        if cross > 0:  # Newcombe's continuity correction of the correlation
            cross = max(cross - self.n / 2, 0.0)
        phi = cross / math.sqrt(margins) if margins else 0.0
        low = p1 - p2 - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
        high = p1 - p2 + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
        return (max(-100.0, 100 * low), min(100.0, 100 * high))

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.points:+.1f} [{low:+.1f}, {high:+.1f}]"

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> PairedDelta:
        """From ``(a_succeeded, b_succeeded)`` per case."""
        counts = [0, 0, 0, 0]
        for a, b in pairs:
            counts[(not a) * 2 + (not b)] += 1
        both, only_a, only_b, neither = counts
        return cls(both, only_a, only_b, neither)


def success_rate(episodes: Iterable[Episode]) -> Rate:
    eps = list(episodes)
    return Rate(sum(e.success for e in eps), len(eps))


def tool_error_rate(episodes: Iterable[Episode]) -> Rate:
    """Share of tool calls that named no tool or had invalid arguments."""
    eps = list(episodes)
    return Rate(sum(e.tool_errors for e in eps), sum(len(e.calls) for e in eps))


def refusal_rate(episodes: Iterable[Episode]) -> Rate:
    """Share of unsolvable tasks the agent refused (higher is better)."""
    unsolvable = [e for e in episodes if not e.solvable]
    return Rate(sum(e.outcome == "refused" for e in unsolvable), len(unsolvable))


def delta(perturbed: Iterable[Episode], clean: Iterable[Episode]) -> Delta:
    return Delta(success_rate(perturbed), success_rate(clean))


def pass_hat_k(episodes: Sequence[Episode], k: int) -> float:
    """pass^k (tau-bench): the chance that k i.i.d. trials of a task all succeed, averaged over tasks.

    ``episodes`` holds several trials per task (grouped by task id); each task needs at least k.
    """
    by_task: dict[str, list[bool]] = defaultdict(list)
    for e in episodes:
        by_task[e.task.id].append(e.success)
    scores = []
    for task_id, trials in by_task.items():
        if len(trials) < k:
            raise UsageError(f"pass^{k} needs {k} trials per task; task {task_id} has {len(trials)}")
        scores.append(math.comb(sum(trials), k) / math.comb(len(trials), k))
    return sum(scores) / len(scores) if scores else float("nan")
