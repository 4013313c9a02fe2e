"""Identifiers in case styles, as releases change them (``place_id`` → ``placeId``), their common fold, and the keys
of JSON data renamed."""

from __future__ import annotations

import re
from typing import Any

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATOR = re.compile(r"[_\-\s]+")


def words(name: str) -> list[str]:
    """The words of an identifier, split at ``_``, ``-`` and camelCase humps, lower-cased."""
    return [w.lower() for w in _SEPARATOR.split(_HUMP.sub("_", name)) if w]


def restyle(name: str, style: str) -> str:
    """``name`` in ``style``: ``snake``, ``camel``, ``pascal`` or ``kebab``; a name with no words stays."""
    parts = words(name)
    if not parts:
        return name
    if style == "snake":
        return "_".join(parts)
    if style == "kebab":
        return "-".join(parts)
    pascal = "".join(p[:1].upper() + p[1:] for p in parts)
    return pascal if style == "pascal" else parts[0] + pascal[len(parts[0]) :]


def swapped(name: str) -> str:
    """The style a release most often moves a name to: snake_case ↔ camelCase (kebab-case → snake_case)."""
    if "_" in name or "-" in name:
        return restyle(name, "camel")
    return restyle(name, "snake")


def fold(name: str) -> str:
    """What every case style of a name shares: its words run together, lower-cased."""
    return "".join(words(name))


def rename_keys(content: Any, mapping: dict[str, str], deep: bool = True) -> Any:
    """``content`` with the keys of ``mapping`` renamed: at every depth, or (``deep=False``) at the top only."""
    if isinstance(content, list):
        return [rename_keys(v, mapping, deep) for v in content] if deep else content
    if not isinstance(content, dict):
        return content
    return {mapping.get(k, k): rename_keys(v, mapping, deep) if deep else v for k, v in content.items()}
