"""Reading what the agent sees: observations decoded and normalized to canonical keys, and the view of a turn.

A perturbation may wrap a result in an envelope, rename its fields, convert its units or print it as
``path = value`` lines; :func:`normalize` undoes all of it, so the planner reads every result as the clean
tools give it. The :class:`View` matches results to the steps of the plan by the ``tool_call_id`` the oracle
gave each call (``<step>.<attempt>``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sandbox.agent import ToolSpec, Turn
from sandbox.agents.oracle.cross_check import cross_check
from sandbox.domains import EAGER, get_domain
from sandbox.identifiers import rename_keys
from sandbox.perturbations import vocab
from sandbox.perturbations.formats import parse_lines
from sandbox.task import Task, read_path
from sandbox.vocabulary import DomainVocabulary, Pools

_FORMS = re.compile(
    "|".join(
        "^" + re.escape(form).replace(re.escape("{key}"), f"(?P<k{i}>.+)") + "$"
        for i, form in enumerate(f for forms in vocab.FIELD_FORMS.values() for f in forms)
    )
)
"""The key renames of ``format_shift`` on a domain without field synonyms, read backwards."""


_FIELD_PAIR = re.compile(r"([\w-]+) → ([\w-]+)")
_FIELD_NOTE = re.compile(
    "|".join(
        re.escape(note).replace(re.escape("{pairs}"), r"[\w-]+ → [\w-]+(?:, [\w-]+ → [\w-]+)*")
        for notes in vocab.FIELD_NOTES.values()
        for note in notes
    )
)


def field_renames(description: str) -> dict[str, str]:
    """The result fields a tool's release note says it renamed (``old → new``), as new name → old name."""
    return {new: old for old, new in _FIELD_PAIR.findall(description)}


def without_field_notes(description: str) -> str:
    """A description without its release note on result fields: it tells how answers read, not what the tool
    does."""
    return _FIELD_NOTE.sub("", description).strip() if "→" in description else description


def ours() -> tuple[DomainVocabulary, ...]:
    """The vocabularies of the built-in worlds (``sandbox.domains.EAGER``), read where no domain is named."""
    return tuple(v for v in (get_domain(name).vocabulary for name in EAGER) if v is not None)


@lru_cache(maxsize=16)
def _fields(domain: str) -> dict[str, str] | None:
    """Renamed result key → canonical key: the domain's field synonyms (all of ours when ``domain`` is
    empty); ``None`` where the domain has none, and the generic forms are undone instead."""
    words = vocab.vocabulary(domain) if domain else None
    synonyms = words.field_synonyms if words is not None else {} if domain else _all_fields()
    if domain and not synonyms:
        return None
    return {synonym: key for key, pools in synonyms.items() for words in pools.values() for synonym in words}


def _all_fields() -> dict[str, Pools]:
    return {key: pools for words in ours() for key, pools in words.field_synonyms.items()}


def _unform(key: str) -> str:
    m = _FORMS.match(key)
    return key if m is None else next(v for v in m.groupdict().values() if v is not None)


_ENVELOPES = {word for words in vocab.ENVELOPES.values() for word in words}
_NOTES = {key for notes in vocab.MISSING_NOTES.values() for key, _ in notes} | {"status"}
_PARTIAL = {note for notes in vocab.MISSING_NOTES.values() for note in notes}


def partial(result: Any) -> bool:
    """Whether an answer says that some of its fields are missing."""
    return isinstance(result, dict) and any(result.get(key) == text for key, text in _PARTIAL)


lookup = read_path
"""A result's value at a dotted path (see :func:`sandbox.task.read_path`)."""


def decode(text: Any) -> Any:
    """An observation as data: JSON, or the ``path = value`` lines of a shifted format."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return parse_lines(text) or text


def normalize(content: Any, domain: str = "") -> Any:
    """Canonical keys: envelopes unwrapped, synonyms renamed (those of ``domain``), units converted back."""
    if isinstance(content, list):
        return [normalize(v, domain) for v in content]
    if not isinstance(content, dict):
        return content
    if len(set(content) & _ENVELOPES) == 1:
        return normalize(content[next(iter(set(content) & _ENVELOPES))], domain)
    fields = _fields(domain)
    if fields is None:
        return _metric({_unform(k): normalize(v, domain) for k, v in content.items()})
    out = {fields.get(k, k): normalize(v, domain) for k, v in content.items()}
    if isinstance(out.get("mi"), int | float):
        out["km"] = round(out.pop("mi") * 1.609344, 1)
    if isinstance(out.get("temp_f"), int | float):
        celsius = (out.pop("temp_f") - 32) / 1.8
        out["temp_c"] = round(celsius) if abs(celsius - round(celsius)) < 0.01 else round(celsius, 1)
    return out


_IMPERIAL = {"mi": ("km", 1.609344, 0.0), "f": ("c", 1 / 1.8, -32 / 1.8), "lb": ("kg", 1 / 2.20462262, 0.0),
             "in": ("cm", 2.54, 0.0)}  # fmt: skip
_IMPERIAL_KEY = re.compile(r"^(.*_)(" + "|".join(_IMPERIAL) + r")$")


def _metric(content: dict[str, Any]) -> dict[str, Any]:
    """Unit-named keys of a domain without unit tools back in metric units (what ``behaviour_change`` converts)."""
    out = {}
    for key, value in content.items():
        m = _IMPERIAL_KEY.match(key)
        if m is None or not isinstance(value, int | float) or isinstance(value, bool):
            out[key] = value
            continue
        unit, factor, offset = _IMPERIAL[m.group(2)]
        out[m.group(1) + unit] = round(value * factor + offset, 4)  # only floats are converted
    return out


def is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result and "message" in result


def says_error(result: Any) -> bool:
    """Whether a successful answer says that it failed (bfcl's ``{"error": 404}``)."""
    return isinstance(result, dict) and "error" in result


def first_string(value: Any) -> str | None:
    """The value a helper tool returned (a token, a request), skipping notes about missing fields."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [v for k, v in value.items() if k not in _NOTES]
    if isinstance(value, list):
        return next((s for s in map(first_string, value) if s is not None), None)
    return None


def rows_key(result: Any) -> str | None:
    """The key of a page's rows: ``results``, else the one key holding a list."""
    if not isinstance(result, dict):
        return None
    if "results" in result:
        return "results"
    keys = [k for k, v in result.items() if isinstance(v, list)]
    return keys[0] if len(keys) == 1 else None


def rows_complete(result: Any, rank_by: str | None = "rating") -> bool:
    """Whether a page of search results is whole: no field missing, every row ranked (by ``rank_by``)."""
    if partial(result):
        return False
    key = rows_key(result)
    rows = result.get(key) if key is not None else None
    return isinstance(rows, list) and all(isinstance(r, dict) and (rank_by is None or r.get(rank_by) is not None)
                                          for r in rows)  # fmt: skip


@dataclass
class Attempt:
    tool: str
    args: Any
    result: Any = None
    normalized: Any = None
    """``result`` through :func:`normalize` when it is a success, else ``None``."""
    answered: bool = False
    """Whether the call's result came back (a tool may answer ``null``: ``result`` cannot tell)."""
    suspect: bool = False
    """Whether the answer's echo of the request names another entity than the call asked about (see
    :func:`sandbox.perturbations.echo.contradicts`), or that an earlier answer about the same entity contradicts
    (:mod:`sandbox.agents.oracle.cross_check`): it is not read, and the call is asked again."""


@lru_cache(maxsize=1024)
def _observation_text(text: str, domain: str) -> tuple[Any, Any]:
    """An observation decoded, and normalized when it is a success. Kept by its text: each turn
    rereads every earlier observation of the episode. Shared between turns, so callers only read them."""
    result = decode(text)
    return result, None if result is None or is_error(result) else normalize(result, domain)


def _observation(content: Any, domain: str) -> tuple[Any, Any]:
    if isinstance(content, str):
        return _observation_text(content, domain)
    result = decode(content)
    return result, None if result is None or is_error(result) else normalize(result, domain)


@dataclass
class View:
    """What the agent sees, read once per turn."""

    task: Task
    tools: dict[str, ToolSpec]
    query: str
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    latest: list[Attempt] = field(default_factory=list)
    """The attempts of the last reply that made calls."""
    sent: dict[str, int] = field(default_factory=dict)
    """Calls sent for each step, those that do not count (:meth:`_unordered`) included: the next call's number."""

    @classmethod
    def read(cls, turn: Turn, task: Task) -> View:
        tools = {t["function"]["name"]: t for t in turn.tools}
        query = next((m["content"] for m in turn.messages if m.get("role") == "user"), "")
        view = cls(task, tools, query)
        notes = {n: field_renames(t["function"]["description"]) for n, t in tools.items()
                 if "→" in t["function"]["description"]}  # fmt: skip
        pending: dict[str, Attempt] = {}
        replies: list[list[tuple[str, Attempt]]] = []
        for m in turn.messages:
            if m.get("tool_calls"):
                view.latest = []
                replies.append([])
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                pending[call["id"]] = attempt = Attempt(fn["name"], fn["arguments"])
                step = call["id"].rsplit(".", 1)[0]
                view.attempts.setdefault(step, []).append(attempt)
                view.sent[step] = view.sent.get(step, 0) + 1
                view.latest.append(attempt)
                replies[-1].append((step, attempt))
            if m.get("role") == "tool" and m.get("tool_call_id") in pending:
                attempt = pending[m["tool_call_id"]]
                attempt.result, attempt.normalized = _observation(m["content"], task.domain)
                renamed = notes.get(attempt.tool)
                if renamed and attempt.normalized is not None:
                    attempt.normalized = rename_keys(attempt.normalized, renamed)
                attempt.answered = True
        for reply in replies:
            view._unordered(reply)
        cross_check(task, view.attempts, view.done)
        return view

    def _unordered(self, reply: list[tuple[str, Attempt]]) -> None:
        """Forget the calls of ``reply`` that failed after a call they depend on failed before them in the same
        reply: they ran out of order (``cd a`` failed, then ``cd b`` ran from the wrong folder), and are sent
        again once what they depend on is done. One that succeeded stays: what it did cannot be undone."""
        after = {c.id: set(c.after) for c in self.task.plan}
        failed: set[str] = set()
        for step, attempt in reply:
            call = step.split("~", 1)[0]
            bad = attempt.answered and (is_error(attempt.result) or says_error(attempt.result))
            if bad and after.get(call, set()) & failed:
                self.attempts[step].remove(attempt)
            if bad:
                failed.add(call)

    def last(self, step: str) -> Attempt | None:
        tries = self.attempts.get(step)
        return tries[-1] if tries else None

    def done(self, step: str) -> Any:
        """The normalized result of a step if its last attempt succeeded, else ``None``."""
        last = self.last(step)
        return None if last is None or last.suspect else last.normalized
