"""End states: a state as plain JSON data (:func:`snapshot`), and the checks of a task's expected end state made
of it: the state a gold plan leaves (:func:`same_as`) or a dict of expected values (:func:`expected_state`).

A user's domain keys its cached episodes by the code of these checks (``sandbox.domain.Domain.version``), this
module's source included.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from sandbox.domain import EndState
from sandbox.errors import WrongType


def holds(end_state: EndState | None, state: Any) -> bool | None:
    """Whether ``end_state`` holds on ``state``; ``None`` without one, or where it cannot be read (it raises on a
    state the plan has not finished)."""
    if end_state is None:
        return None
    try:
        return bool(end_state(state))
    except Exception:
        return None


def snapshot(state: Any) -> Any:
    """The state as plain JSON data, for comparing end states: dataclasses, pydantic models and objects by
    their public fields (a name starting with ``_`` is left out), containers item by item."""
    return json.loads(json.dumps(_plain(state), sort_keys=True, default=lambda o: f"<{type(o).__name__}>"))


def _plain(value: Any, depth: int = 0) -> Any:
    if depth > 20 or value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v, depth + 1) for v in value), key=repr)
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif hasattr(value, "__dict__"):
        fields = vars(value)
    else:
        return value
    return {k: _plain(v, depth + 1) for k, v in fields.items() if not k.startswith("_")}


def same_as(expected: Any) -> EndState:
    """The check that a state's snapshot is ``expected`` (the snapshot of the state a gold plan leaves)."""
    return lambda state: snapshot(state) == expected


def expected_state(where: str, given: EndState | Mapping[str, Any] | None) -> EndState | None:
    """A task's ``end_state`` as a check: a function as given, a dict as "the snapshot has these values"."""
    if given is None or callable(given):
        return given
    if not isinstance(given, Mapping):
        raise WrongType(f"{where}: end_state is a function state -> bool or a dict of expected values")
    expected = snapshot(dict(given))

    def matches(state: Any) -> bool:
        now = snapshot(state)
        return isinstance(now, dict) and all(k in now and now[k] == v for k, v in expected.items())

    return matches
