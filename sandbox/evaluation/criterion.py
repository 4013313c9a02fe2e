"""A gate's criterion (``perception.delta>=-10``) and what checking one gives: the pieces that the fixed gate
(:mod:`sandbox.evaluation.gate`) and the sequential one (:mod:`sandbox.evaluation.sequential`) share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]


@dataclass(frozen=True)
class Criterion:
    scope: str
    metric: str
    op: str
    threshold: float
    text: str

    def verdict(self, low: float, high: float) -> Verdict:
        """From the interval ``[low, high]`` of the measured value."""
        strict = self.op in (">", "<")
        if self.op in (">=", ">"):
            clears, beyond = _above(low, self.threshold, strict), not _above(high, self.threshold, strict)
        else:
            clears, beyond = _above(-high, -self.threshold, strict), not _above(-low, -self.threshold, strict)
        return "PASS" if clears else "FAIL" if beyond else "INCONCLUSIVE"


def _above(value: float, threshold: float, strict: bool) -> bool:
    return value > threshold if strict else value >= threshold


@dataclass(frozen=True)
class Check:
    """One criterion (or one baseline scope) as checked: its verdict and what was measured."""

    text: str
    verdict: Verdict
    detail: str

    def __str__(self) -> str:
        return f"{self.text}: {self.detail}"
