"""Tools' JSON schemas: read from a typed function's docstring, turned into Python types for a spec's
arguments, written as the chat-template spec, and a call's validation errors said in a line."""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

_SECTION = re.compile(r"^(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_ARG_LINE = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the descriptions of a Google-style ``Args:`` section."""
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    found = _SECTION.search(doc)
    if found is None:
        return summary, {}
    described: dict[str, str] = {}
    current, indent = None, 0
    for line in doc[found.end() :].splitlines()[1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            break  # the next section
        m = _ARG_LINE.match(line)
        if m and (current is None or len(line) - len(line.lstrip()) <= indent):
            current, indent = m.group(1), len(line) - len(line.lstrip())
            described[current] = m.group(2).strip()
        elif current is not None and line.strip():
            described[current] = f"{described[current]} {line.strip()}".strip()
    return summary, described


_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                               "object": dict, "null": type(None)}  # fmt: skip


def python_type(prop: Mapping[str, Any]) -> Any:
    """The Python type a JSON-schema property takes (for a pydantic model of a spec's arguments)."""
    if "enum" in prop:
        return Literal[tuple(prop["enum"])]
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return typing.Union[tuple(python_type(p) for p in prop[key])]  # noqa: UP007
    kind = prop.get("type")
    if isinstance(kind, list):
        return typing.Union[tuple(_JSON_TYPES.get(k, Any) for k in kind)]  # noqa: UP007
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def model_name(name: str) -> str:
    """A class name made of a tool name (``search_books`` → ``SearchBooks``)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", name)) or "Tool"


def make_spec(name: str, description: str, args: type[BaseModel]) -> dict[str, Any]:
    """The chat-template spec of a tool whose arguments ``args`` validates."""
    schema = args.model_json_schema()
    properties = {}
    for pname, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k not in ("title", "default")}
        properties[pname] = prop
    parameters = {"type": "object", "properties": properties, "required": schema.get("required", [])}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def describe_validation_error(exc: ValidationError) -> str:
    """What was wrong with a call's arguments, in a line the agent reads."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument '{where}'")
        elif err["type"] == "missing":
            parts.append(f"missing argument '{where}'")
        else:
            parts.append(f"'{where}': {err['msg']}")
    return "; ".join(parts)
