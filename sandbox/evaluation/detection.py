"""Detection apart from recovery: per perturbation, how often the agent noticed a fault, recovered from it, or went
on as if nothing had happened, each with its Wilson interval.

A **fault** is what the world did to the agent, read off the trajectory (:func:`faults`): a call that failed with
a transient error, a rate limit or a move (``runtime_error``, ``rate_limited``, ``moved``: an entity that does not
exist or a fatal error is a fact of the world, and an unknown tool or bad arguments the agent's own doing), each
wrong answer a tool served (``Episode.deceptions``), and each fault the LLM proxy injected into the agent's own
model (``Episode.model_faults``). Another source of faults appends its reader to :data:`FAULT_READERS`.

The agent **noticed** a fault of a tool when a later turn calls the same tool again (a retry, a second look) or a
tool the error message names (a redirect's target, a wait tool), or its words say so (an error, a failure, a
wait, a retry, a mismatch, a wrong or different value); a fault of its model when its loop asked its model again
after the last one. A record is *noticed* when every fault of its episode was (``Record.noticed``; ``None`` for an
episode that met none). Recovered is the episode's success; went on is neither.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sandbox.metrics import Rate

if TYPE_CHECKING:
    from sandbox.trajectory import Episode

FAULT_KINDS = frozenset({"runtime_error", "rate_limited", "moved"})
_SAID = re.compile(
    r"error|fail|unavailab|rate.?limit|too many|retry|try(?:ing)? again|again|wait|moved|redirect|no longer"
    r"|inconsisten|mismatch|(?:does ?n[o']t|do ?n[o']t) match|discrepan|conflict|differ|wrong|instead|incorrect"
    r"|verif|double.?check|cross.?check",
    re.IGNORECASE,
)
_NAME = re.compile(r"[A-Za-z_][\w.-]*")
_CALLS = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.DOTALL)


@dataclass(frozen=True)
class Fault:
    """One fault the agent met: in which turn (the index of the step whose call met it), on which tool, of which
    kind, and the tools its message names (where the agent may rightly go next)."""

    turn: int
    tool: str
    kind: str
    names: frozenset[str] = frozenset()
    seen: bool | None = None
    """Whether it was noticed, where its source knows better than the trajectory (a model fault: whether the
    harness asked its model again); ``None``: read off the trajectory."""


def interaction_faults(episode: Episode) -> list[Fault]:
    """The transient errors and the wrong answers of an episode, in turn order."""
    out = []
    for i, step in enumerate(episode.steps):
        for call, result in zip(step.calls, step.results, strict=False):
            if result.error in FAULT_KINDS:
                names = frozenset(_NAME.findall(result.message or "")) - {call.name}
                out.append(Fault(i, call.name, result.error, names))
    out += [Fault(int(d.get("turn", 0)), str(d.get("tool", "")), "deceptive") for d in episode.deceptions]
    return sorted(out, key=lambda f: f.turn)


def model_faults(episode: Episode) -> list[Fault]:
    """The faults the LLM proxy injected into the agent's own model: noticed when its loop asked its model again
    after the last one."""
    summary = getattr(episode, "model_faults", None) or {}
    again = bool(summary.get("asked_again"))
    return [Fault(len(episode.steps), "model", str(e.get("fault", "model")) if isinstance(e, dict) else "model",
                  seen=again) for e in summary.get("injected", ())]  # fmt: skip


FAULT_READERS: list[Callable[[Episode], list[Fault]]] = [interaction_faults, model_faults]
"""Where faults are read from; a source of faults of its own appends its reader."""


def faults(episode: Episode) -> list[Fault]:
    return [f for read in FAULT_READERS for f in read(episode)]


def noticed(episode: Episode, fault: Fault) -> bool:
    """Whether the agent noticed ``fault`` (the module docstring says how it is read)."""
    if fault.seen is not None:
        return fault.seen
    for step in episode.steps[fault.turn + 1 :]:
        if any(c.name == fault.tool or c.name in fault.names for c in step.calls):
            return True
        if _SAID.search(_CALLS.sub("", step.reply or "")):  # the words, not the arguments of the calls
            return True
    return False


def notice(episode: Episode) -> bool | None:
    """Whether the agent noticed every fault its episode met; ``None`` where it met none."""
    found = faults(episode)
    return all(noticed(episode, f) for f in found) if found else None


class Record(Protocol):
    """What detection reads of a report's record (read-only: the record is frozen)."""

    @property
    def tier(self) -> str | None: ...
    @property
    def perturbations(self) -> tuple[str, ...]: ...
    @property
    def success(self) -> bool: ...
    @property
    def noticed(self) -> bool | None: ...


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
