"""Echoes: the fields of an answer that repeat what the request asked for, the world's own cross-check.

A tool that answers ``get_place_details(place_id="P332")`` with ``{"id": "P332", ...}`` echoes its request: a
field named as a parameter (``city`` for ``city``), or as its last word (``id`` for ``place_id``), holding a
plain value. An answer whose echo holds another value is about another entity than the one asked for, whatever
else it says: that is how an agent notices a plausible but wrong answer (``deceptive_result``), and how the
oracle does. The rule reads names only, so it knows no domain's tools.
"""

from __future__ import annotations

from typing import Any


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def echo_pairs(args: Any, content: Any) -> list[tuple[str, str]]:
    """(parameter, answer key) for each top-level field of ``content`` that is named after a parameter of
    ``args`` (the same name, or its last ``_`` word) and holds a plain value, as the argument does."""
    if not isinstance(args, dict) or not isinstance(content, dict):
        return []
    pairs = []
    for param, value in args.items():
        if not isinstance(param, str) or not _scalar(value):
            continue
        for key, held in content.items():
            if isinstance(key, str) and (key == param or param.endswith("_" + key)) and _scalar(held):
                pairs.append((param, key))
    return pairs


def same(a: Any, b: Any) -> bool:
    """Whether two plain values say the same (text compared without case or surrounding space)."""
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    if isinstance(a, str) or isinstance(b, str):
        return str(a).strip().casefold() == str(b).strip().casefold()
    return a == b


def echoes(args: Any, content: Any) -> list[tuple[str, str]]:
    """The echo pairs (:func:`echo_pairs`) whose answer field holds the argument's value: the request repeated."""
    return [(p, k) for p, k in echo_pairs(args, content) if same(args[p], content[k])]


def contradicts(args: Any, content: Any) -> bool:
    """Whether an answer's echo names another entity than ``args`` asked for: a field named after a parameter,
    holding another plain value."""
    return any(not same(args[p], content[k]) for p, k in echo_pairs(args, content))
