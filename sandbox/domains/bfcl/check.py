"""Success as BFCL's multi-turn checker judges it, turn by turn (``multi_turn_checker.py``).

For every turn whose gold calls are not empty, after that turn:

1. **The agent called something** in it (BFCL's ``empty_turn_model_response``).
2. **State check**: every public attribute of every backend instance equals the one after the gold
   calls of the turns so far (BFCL's ``instance_state_mismatch``).
3. **Response check**: each result of the turn's gold calls (as a string) appears among the
   results of the agent's calls in this turn or any before it, counted with multiplicity and in
   any order (BFCL's ``execution_response_mismatch``).

A turn with no gold calls (the request cannot be done yet: a missing function or parameter) is
not checked; calls made there still count, through the state at the next checked turn. The first
failing turn decides, and the reason names the turn, the check and the difference.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any

from sandbox.domains.bfcl.backends import build_instances, execute, methods, snapshot
from sandbox.domains.bfcl.data import Entry

Snapshot = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Turn:
    """What one side (gold or agent) left after one user turn."""

    calls: int
    results: tuple[str, ...]
    state: Snapshot


@cache
def gold_turns(entry: Entry) -> tuple[Turn, ...]:
    """The gold calls replayed on fresh instances: the reference for every turn (cached per entry)."""
    instances = build_instances(list(entry.classes), entry.config, entry.long_context)
    bound = methods(instances)
    turns = []
    for calls in entry.gold:
        # deep copies: a backend may change what it is given (a post's tags), and these are the task's arguments
        results = tuple(execute(bound[name], name, copy.deepcopy(args))[1] for name, args in calls)
        turns.append(Turn(len(calls), results, snapshot(instances)))
    return tuple(turns)


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check(entry: Entry, agent: list[Turn]) -> str | None:
    """``None`` if the agent's turns pass BFCL's checks, else why not (the first failing turn)."""
    gold = gold_turns(entry)
    seen: list[str] = []
    for t, expected in enumerate(gold):
        if t >= len(agent):
            return f"turn {t + 1} of {len(gold)}: the episode ended before it"
        got = agent[t]
        seen.extend(got.results)
        if not expected.calls:
            continue
        if not got.calls:
            return f"turn {t + 1}: no function call, where the gold plan makes {expected.calls}"
        for cls, attrs in expected.state.items():
            for attr, value in attrs.items():
                mine = got.state[cls].get(attr)
                if mine != value:
                    return f"turn {t + 1}: state of {cls}.{attr} differs: {_short(mine)}, expected {_short(value)}"
        missing = Counter(expected.results) - Counter(seen)
        if missing:
            return f"turn {t + 1}: no call of the agent returned {_short(next(iter(missing)))}"
    return None
