"""BFCL's multi-turn data, as shipped in the ``bfcl-eval`` wheel: entries, gold calls, tool specs.

Read from the installed package's ``data`` folder (nothing is downloaded). Each entry becomes a
:class:`~sandbox.task.Task` whose ``plan`` is the gold calls of every turn in order, each call's id
``t<turn>.<n>`` (``t2.0`` is the first call of the third user turn), every argument by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from sandbox.domains.bfcl.backends import BACKENDS, backend_class, method_names
from sandbox.domains.bfcl.calls import parse_call
from sandbox.errors import UsageError
from sandbox.task import Call, Task

CATEGORIES: tuple[str, ...] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
VERSION_PREFIX = "BFCL_v4"
HOLDOUT_MESSAGE = "I have updated some more functions you can choose from. What about now?"
"""What the user says on a turn that only brings back held-out functions (BFCL's own words)."""

# BFCL's GORILLA_TO_OPENAPI, for the types its multi-turn docs use; anything else becomes a string, as there
_TYPES = {"integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
          "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object",
          "tuple": "array", "any": "string"}  # fmt: skip


@dataclass(frozen=True, eq=False)  # hashed by identity: gold_turns caches per entry
class Entry:
    """One BFCL multi-turn test entry, with its gold calls by turn (name, keyword arguments)."""

    id: str
    category: str
    turns: tuple[str, ...]
    """The user's message of each turn (a holdout turn's is :data:`HOLDOUT_MESSAGE`)."""
    config: dict[str, Any]
    classes: tuple[str, ...]
    holdout: dict[int, tuple[str, ...]]
    """Functions held back until turn ``i`` (``multi_turn_miss_func``)."""
    gold: tuple[tuple[tuple[str, dict[str, Any]], ...], ...]

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category


def _lines(*parts: str) -> list[dict[str, Any]]:
    path = files("bfcl_eval").joinpath("data", *parts)
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _jsonable(value: Any) -> Any:
    """A literal as JSON gives it back (tuples become lists), as an agent's arguments arrive."""
    return json.loads(json.dumps(value))


def _entry(category: str, row: dict[str, Any], answer: dict[str, Any]) -> Entry:
    classes = tuple(row["involved_classes"])
    unknown = [c for c in classes if c not in BACKENDS]
    if unknown:
        raise ValueError(f"{row['id']}: backends {unknown} are not among the eight multi-turn backends")
    owner = {name: cls for cls in classes for name in method_names(cls)}
    gold = []
    for calls in answer["ground_truth"]:
        turn = []
        for text in calls:
            call = parse_call(text)
            method = getattr(backend_class(owner[call.name]), call.name)
            turn.append((call.name, _jsonable(call.keywords(method))))
        gold.append(tuple(turn))
    holdout = {int(k): tuple(v) for k, v in row.get("missed_function", {}).items()}
    turns = []
    for i, messages in enumerate(row["question"]):
        users = [m["content"] for m in messages if m["role"] == "user"]
        turns.append("\n".join(users) if users else HOLDOUT_MESSAGE if i in holdout else "")
    return Entry(row["id"], category, tuple(turns), row["initial_config"], classes, holdout, tuple(gold))


@cache
def entries(category: str) -> tuple[Entry, ...]:
    """Every entry of ``category``, in BFCL's order."""
    if category not in CATEGORIES:
        raise UsageError(f"BFCL category must be one of {CATEGORIES}, got {category!r}")
    rows = _lines(f"{VERSION_PREFIX}_{category}.json")
    answers = {a["id"]: a for a in _lines("possible_answer", f"{VERSION_PREFIX}_{category}.json")}
    return tuple(_entry(category, row, answers[row["id"]]) for row in rows)


def task(entry: Entry) -> Task:
    plan: list[Call] = []
    previous: tuple[str, ...] = ()
    for t, calls in enumerate(entry.gold):
        for n, (name, args) in enumerate(calls):
            call = Call(id=f"t{t}.{n}", tool=name, args=args, after=previous)
            plan.append(call)
            previous = (call.id,)
    return Task(
        id=entry.id, domain="bfcl", family=entry.category, split="test", seed=0, params={}, phrasing=0,
        query=entry.turns[0], plan=tuple(plan), answer={}, sources={},
    )  # fmt: skip


def _schema(prop: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in prop.items() if k not in ("type", "properties", "items", "optional")}
    out["type"] = _TYPES.get(prop.get("type", "string"), "string")
    if "properties" in prop:
        out["properties"] = {k: _schema(v) for k, v in prop["properties"].items()}
    if "items" in prop:
        out["items"] = _schema(prop["items"])
    return out


@cache
def class_specs(name: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """(function name, chat-template tool spec) for each function BFCL documents for backend ``name``."""
    specs = []
    for doc in _lines("multi_turn_func_doc", BACKENDS[name][1]):
        params = doc.get("parameters", {})
        parameters = {
            "type": "object",
            "properties": {k: _schema(v) for k, v in params.get("properties", {}).items()},
            "required": list(params.get("required", [])),
        }
        spec = {"name": doc["name"], "description": doc.get("description", ""), "parameters": parameters}
        specs.append((doc["name"], {"type": "function", "function": spec}))
    return tuple(specs)
