"""The plain-text observation format of ``format_shift`` at its top severity, and its reader.

One ``path = value`` line per leaf (``results.0.name = Blue Fox Bistro``): short, readable by a
small model, and unambiguous to parse back.
"""

from __future__ import annotations

import json
from typing import Any


def render_lines(content: Any) -> str:
    return "\n".join(f"{path} = {_scalar(value)}" for path, value in _leaves(content, ""))


def parse_lines(text: str) -> Any:
    root: dict[str, Any] = {}
    for line in text.splitlines():
        path, sep, raw = line.partition(" = ")
        if not sep:
            return None
        node: Any = root
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _value(raw)
    return _lists(root)


def _leaves(value: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{prefix}.{i}" if prefix else str(i))]
    return [(prefix or "value", value)]


def _scalar(value: Any) -> str:
    """A leaf as its line writes it: a string as it is where it reads back as itself, else (a number's digits,
    ``true``, a line break, spaces at an end) quoted as JSON."""
    if isinstance(value, str) and _value(value) == value and "\n" not in value and value == value.strip():
        return value
    return json.dumps(value, ensure_ascii=False)


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _lists(node: Any) -> Any:
    """Dicts keyed 0, 1, 2... become lists again."""
    if not isinstance(node, dict):
        return node
    node = {k: _lists(v) for k, v in node.items()}
    if node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node
