"""The worst case a search found in a tier, as reports keep it and gates read it (``worst.TIER.success``).

A search for the worst case (``--openagent-search worst``, ``openagent eval --worst N``; scored and built in
:mod:`sandbox.evaluation.degradation`) reports, per tier, the case of highest degradation, its shrunk form,
what the search spent, and the neighbourhood: the shrunk stack re-run on the other tasks of its task's
family, whose success rate (Wilson interval) bounds how often that stack breaks the agent.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.errors import UsageError
from sandbox.metrics import Rate


@dataclass(frozen=True)
class WorstCase:
    """The worst case a search found in one tier (plain data: JSON round-trips)."""

    tier: str
    case: str
    """The case of highest degradation, in one line (``Case.describe``)."""
    score: float
    stack: tuple[dict[str, Any], ...]
    task: str
    family: str
    """The family the neighbourhood is drawn from: the shrunk failure's task's (the worst case's where none failed)."""
    shrunk: str | None
    """The failure the search found, shrunk, in one line; ``None`` where no case failed."""
    shrunk_stack: tuple[dict[str, Any], ...]
    examples: int
    """Cases the search ran (each with its clean twin), shrinking included."""
    episodes: int
    """Distinct episodes those cases needed (each case and each clean twin once), run or read from the cache."""
    neighbourhood: Rate
    """Success of the shrunk stack (the worst where nothing failed) on the other tasks of ``family``."""
    neighbours: tuple[str, ...] = ()
    seed: int | None = None
    search: str = ""
    """What ran the search: ``openagent eval --worst``, or the pytest test it came from."""
    agent: str = ""
    """The fingerprint of the agent the search ran (a test may run another agent than the session's)."""
    not_rerun: str = ""
    """Why the neighbourhood was not run, where it was not (the agent was not at hand); empty where it was."""

    @property
    def failure_bound(self) -> float:
        """A lower bound on the stack's failure rate in the neighbourhood: one less the top of its success interval."""
        return 1.0 - self.neighbourhood.interval[1] if self.neighbourhood.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        low, high = self.neighbourhood.interval
        return {
            "tier": self.tier, "case": self.case, "score": self.score, "stack": list(self.stack), "task": self.task,
            "family": self.family, "shrunk": self.shrunk, "shrunk_stack": list(self.shrunk_stack),
            "examples": self.examples, "episodes": self.episodes,
            "neighbourhood": {
                "k": self.neighbourhood.k, "n": self.neighbourhood.n, "low": _num(low), "high": _num(high),
            },
            "failure_bound": round(self.failure_bound, 6), "neighbours": list(self.neighbours), "seed": self.seed,
            "search": self.search, "agent": self.agent, "not_rerun": self.not_rerun,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorstCase:
        try:
            around = data["neighbourhood"]
            return cls(
                tier=data["tier"], case=data["case"], score=float(data["score"]), stack=tuple(data["stack"]),
                task=data["task"], family=data["family"], shrunk=data.get("shrunk"),
                shrunk_stack=tuple(data.get("shrunk_stack", ())), examples=int(data["examples"]),
                episodes=int(data["episodes"]), neighbourhood=Rate(int(around["k"]), int(around["n"])),
                neighbours=tuple(data.get("neighbours", ())), seed=data.get("seed"), search=data.get("search", ""),
                agent=data.get("agent", ""), not_rerun=data.get("not_rerun", ""),
            )  # fmt: skip
        except (TypeError, KeyError, ValueError) as exc:
            raise UsageError(f"the report's worst cases are malformed ({type(exc).__name__}: {exc})") from None


def _num(x: float) -> float | None:
    """A number JSON takes: NaN (an interval of no cases) as ``None``, which every JSON parser reads."""
    return None if math.isnan(x) else x


def worst_table(worst: Sequence[WorstCase], means: dict[str, Rate], agents: Collection[str] = ()) -> str:
    """The worst case per tier beside the fixed sample's mean success (where the report has one, of the same agent:
    ``agents`` are the fingerprints the means are of; empty: the same agent, as in ``openagent eval``)."""
    lines = ["worst case found per tier (search: Hypothesis' target(), then shrinking; not the sample's mean):"]
    for w in worst:
        mean = means.get(w.tier) if not agents or not w.agent or w.agent in agents else None
        beside = f"; fixed sample's mean success {mean.value:.1%} (n={mean.n})" if mean is not None and mean.n else ""
        lines.append(
            f"  {w.tier}: {w.shrunk or w.case} (degradation {w.score:.2f}; {w.examples} cases searched, "
            f"{w.episodes} episodes)"
        )
        if w.shrunk is None:
            lines.append("    no case failed within the budget: the worst shown is the one the agent struggled most on")
        around = w.neighbourhood
        if around.n:
            lines.append(
                f"    its stack on {around.n} other {w.family} tasks: success {around.value:.1%}, failure rate at "
                f"least {w.failure_bound:.1%} (95% Wilson){beside}"
            )
        elif w.not_rerun:
            lines.append(f"    its stack was not re-run on other {w.family} tasks: {w.not_rerun}")
        elif beside:
            lines.append(f"    no other {w.family} task to re-run its stack on{beside}")
    return "\n".join(lines)
