"""Reading what the agent sees: observations decoded and normalized to canonical keys, and the view of a turn.

A perturbation may wrap a result in an envelope, rename its fields, convert its units or print it as
``path = value`` lines; :func:`normalize` undoes all of it, so the planner reads every result as the clean
tools give it. The :class:`View` matches results to the steps of the plan by the ``tool_call_id`` the oracle
gave each call (``<step>.<attempt>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sandbox.agent import ToolSpec, Turn
from sandbox.perturbations import vocab
from sandbox.perturbations.formats import parse_lines
from sandbox.task import Task

_FIELDS = {synonym: key for key, pools in vocab.FIELD_SYNONYMS.items() for words in pools.values() for synonym in words}
_ENVELOPES = {word for words in vocab.ENVELOPES.values() for word in words}
_NOTES = {key for notes in vocab.MISSING_NOTES.values() for key, _ in notes} | {"status"}
_PARTIAL = {note for notes in vocab.MISSING_NOTES.values() for note in notes}


def partial(result: Any) -> bool:
    """Whether an answer says that some of its fields are missing."""
    return isinstance(result, dict) and any(result.get(key) == text for key, text in _PARTIAL)


def lookup(content: Any, path: str) -> Any:
    """``results.0.name`` → ``content["results"][0]["name"]``; ``None`` where the path breaks."""
    for part in path.split("."):
        if isinstance(content, list) and part.isdigit() and int(part) < len(content):
            content = content[int(part)]
        elif isinstance(content, dict) and part in content:
            content = content[part]
        else:
            return None
    return content


def decode(text: Any) -> Any:
    """An observation as data: JSON, or the ``path = value`` lines of a shifted format."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return parse_lines(text) or text


def normalize(content: Any) -> Any:
    """Canonical keys: envelopes unwrapped, synonyms renamed, units converted back."""
    if isinstance(content, list):
        return [normalize(v) for v in content]
    if not isinstance(content, dict):
        return content
    if len(set(content) & _ENVELOPES) == 1:
        return normalize(content[next(iter(set(content) & _ENVELOPES))])
    out = {_FIELDS.get(k, k): normalize(v) for k, v in content.items()}
    if isinstance(out.get("mi"), int | float):
        out["km"] = round(out.pop("mi") * 1.609344, 1)
    if isinstance(out.get("temp_f"), int | float):
        celsius = (out.pop("temp_f") - 32) / 1.8
        out["temp_c"] = round(celsius) if abs(celsius - round(celsius)) < 0.01 else round(celsius, 1)
    return out


def is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result and "message" in result


def first_string(value: Any) -> str | None:
    """The value a helper tool returned (a token, a request), skipping notes about missing fields."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [v for k, v in value.items() if k not in _NOTES]
    if isinstance(value, list):
        return next((s for s in map(first_string, value) if s is not None), None)
    return None


def rows_complete(result: Any) -> bool:
    """Whether a page of search results is whole: no field missing, every row rated."""
    if partial(result):
        return False
    rows = result.get("results") if isinstance(result, dict) else None
    return isinstance(rows, list) and all(isinstance(r, dict) and r.get("rating") is not None for r in rows)


@dataclass
class Attempt:
    tool: str
    args: Any
    result: Any = None
    normalized: Any = None
    """``result`` through :func:`normalize` when it is a success, else ``None``."""


@lru_cache(maxsize=1024)
def _observation_text(text: str) -> tuple[Any, Any]:
    """An observation decoded, and normalized when it is a success. Kept by its text: each turn
    rereads every earlier observation of the episode. Shared between turns, so callers only read them."""
    result = decode(text)
    return result, None if result is None or is_error(result) else normalize(result)


def _observation(content: Any) -> tuple[Any, Any]:
    if isinstance(content, str):
        return _observation_text(content)
    result = decode(content)
    return result, None if result is None or is_error(result) else normalize(result)


@dataclass
class View:
    """What the agent sees, read once per turn."""

    task: Task
    tools: dict[str, ToolSpec]
    query: str
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)

    @classmethod
    def read(cls, turn: Turn, task: Task) -> View:
        tools = {t["function"]["name"]: t for t in turn.tools}
        query = next((m["content"] for m in turn.messages if m.get("role") == "user"), "")
        view = cls(task, tools, query)
        pending: dict[str, Attempt] = {}
        for m in turn.messages:
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                pending[call["id"]] = attempt = Attempt(fn["name"], fn["arguments"])
                view.attempts.setdefault(call["id"].rsplit(".", 1)[0], []).append(attempt)
            if m.get("role") == "tool" and m.get("tool_call_id") in pending:
                attempt = pending[m["tool_call_id"]]
                attempt.result, attempt.normalized = _observation(m["content"])
        return view

    def last(self, step: str) -> Attempt | None:
        tries = self.attempts.get(step)
        return tries[-1] if tries else None

    def done(self, step: str) -> Any:
        """The normalized result of a step if its last attempt succeeded, else ``None``."""
        last = self.last(step)
        return None if last is None else last.normalized
