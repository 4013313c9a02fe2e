"""A confidence sequence for the mean of observations in [0, 1]: the betting construction of Waudby-Smith and
Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024 (hedged capital with the
predictable plug-in bets of their Theorem 3 and Section 5.1).

For each candidate mean ``m`` a gambler bets on the observations being above ``m`` (wealth ``K+``) and another on
their being below it (``K-``); each wealth is a nonnegative martingale when the mean is ``m``. Their average reaching
``1/alpha`` rejects ``m`` for good (Ville's inequality: the true mean is rejected with probability at most ``alpha``,
however long one watches and whenever one stops). The interval is the candidates never rejected, on a grid.

Observations come in blocks: every observation of a block is staked with the same bet, fixed before the block is
seen, and candidates are rejected only at a block's end. A block then may mix strata of different means (the k-th
case of each tier): its expected wealth factor is a product of ``1 + bet * (mean_g - m)`` over strata, at most 1 when
``m`` is the pooled mean, so the sequence covers the pooled mean of a sample drawn stratum by stratum.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

GRID = 1000
"""Candidate means are ``i / GRID``; the interval is widened by one step on each side."""
TRUNCATION = 0.75
"""The largest fraction of the wealth a bet may stake (``c`` in the paper)."""


class ConfidenceSequence:
    """An interval for the mean of observations in [0, 1] that holds at every block's end at once, with probability
    at least ``1 - alpha``; ``add`` a block, then read ``interval``."""

    def __init__(self, alpha: float, grid: int = GRID) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        self.alpha = alpha
        self.grid = grid
        self.threshold = math.log(1 / alpha)
        self.alive = list(range(grid + 1))
        """Indices of the candidates not yet rejected."""
        self.log_up = [0.0] * (grid + 1)
        self.log_down = [0.0] * (grid + 1)
        self.n = 0
        self.total = 0.0
        self.squares = 0.0
        """The running sum of ``(x_i - mean_i)^2``, the mean including ``x_i`` (the paper's variance estimate)."""

    def bet(self) -> float:
        """The predictable plug-in bet for the next block, before truncation (the paper's eq. (26))."""
        t = self.n + 1
        variance = (0.25 + self.squares) / t
        return math.sqrt(2 * math.log(2 / self.alpha) / (variance * t * math.log(1 + t)))

    def add(self, block: Iterable[float]) -> None:
        values = [float(x) for x in block]
        if not values:
            return
        if any(not 0.0 <= x <= 1.0 for x in values):
            raise ValueError(f"observations must lie in [0, 1], got {values}")
        stake = self.bet()
        grid, up, down, log1p, exp = self.grid, self.log_up, self.log_down, math.log1p, math.exp
        bound = self.threshold + math.log(2)
        survivors = []
        for i in self.alive:
            m = i / grid
            bet_up = min(stake, TRUNCATION / m) if m > 0 else stake
            bet_down = min(stake, TRUNCATION / (1 - m)) if m < 1 else stake
            a, b = up[i], down[i]
            for x in values:
                a += log1p(bet_up * (x - m))
                b += log1p(-bet_down * (x - m))
            up[i], down[i] = a, b
            if (a + log1p(exp(b - a)) if a >= b else b + log1p(exp(a - b))) < bound:
                survivors.append(i)
        self.alive = survivors
        for x in values:
            self.n += 1
            self.total += x
            self.squares += (x - (0.5 + self.total) / (self.n + 1)) ** 2

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        """The candidates never rejected, widened by a grid step; ``(0, 1)`` before any observation. Empty (every
        candidate rejected, which happens with probability at most ``alpha``) gives the point ``(mean, mean)``."""
        if not self.alive:
            return (self.mean, self.mean)
        step = 1 / self.grid
        return (max(0.0, self.alive[0] * step - step), min(1.0, self.alive[-1] * step + step))


def interval(blocks: Iterable[Iterable[float]], alpha: float, grid: int = GRID) -> tuple[float, float, int]:
    """The interval after ``blocks``, and the number of observations it rests on."""
    cs = ConfidenceSequence(alpha, grid)
    for block in blocks:
        cs.add(block)
    low, high = cs.interval
    return low, high, cs.n
