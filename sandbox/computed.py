"""Answers computed from the gold plan's results: a path that reduces, or the user's own function.

A source path may hold ``*`` (every item of a list, every value of a dict) and end in a reduction after ``|``:

    "c1.results.*.price|sum"       the sum of every row's price
    "c1.results|count"             how many rows (a path without ``*`` reduces the items of what it ends on)
    "c1.results.*.price|argmax:title"  the title of the row whose price is greatest
    "c1.stock|argmax"              the key of the greatest value of a dict
    "c1.cart|keys"                 the keys of a dict, sorted, joined by ", "

A :class:`Computed` is a Python function of the results, for what no path says (a set difference). Either is
computed again by the oracle from what it observed under a perturbation, as the clean tools give it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from sandbox.task import REDUCTIONS, Source, read_path

Results = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Computed:
    """An answer value computed by ``fn(results)``: ``results`` maps the id of each call in ``calls`` (every call
    of the plan when empty) to its result, as the clean tools give it. ``fn`` returns the value (or ``None`` where
    the results do not hold it yet: a field left out, a page missing)."""

    fn: Callable[[Results], Any]
    calls: tuple[str, ...] = ()


def parse(text: str) -> Source:
    """``"c1.results.*.price|argmax:title"`` as a :class:`~sandbox.task.Source`; ``ValueError`` saying what is wrong."""
    where, bar, op = text.partition("|")
    call, _, path = where.partition(".")
    if not call or (not path and not bar):
        raise ValueError("write 'call_id.path' (e.g. 'c1.results.0.title'), or 'call_id.path|reduction'")
    if not bar:
        return Source(call=call, path=path)
    reduce, _, pick = op.partition(":")
    if reduce not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduce!r}; one of {', '.join(REDUCTIONS)}")
    if pick and reduce not in ("argmax", "argmin"):
        raise ValueError(f"'{reduce}:{pick}': only argmax and argmin pick a field of the winning item")
    return Source(call=call, path=path, reduce=reduce, pick=pick or None)


def check(source: Source) -> str | None:
    """What is wrong with a source's form (a ``*`` with no reduction to say what to make of the items), if anything."""
    if source.reduce is None and "*" in source.path.split("."):
        return f"the path {source.path!r} selects every item ('*'): end it in a reduction, e.g. '|count'"
    return None


def value(source: Source, results: Results, computed: Computed | None = None) -> Any:
    """The answer value ``source`` names in ``results`` (call id → result); ``None`` where they do not hold it (a
    call missing, a field left out, a value that is no number where one is summed). ``computed`` is the domain's
    function where ``source.computed`` names calls."""
    if source.computed:
        if computed is None or any(call not in results for call in source.computed):
            return None
        try:
            return computed.fn({call: results[call] for call in source.computed})
        except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError):
            return None  # a result without what the function reads: not in yet
    if source.call not in results:
        return None
    content = results[source.call]
    if source.reduce is None:
        return read_path(content, source.path) if source.path else content
    items = _select(content, source.path.split(".") if source.path else [])
    return None if items is None else _reduce(source, items)


def text(source: Source, found: Any) -> str:
    """A value as the answer quotes it: a reduction's number without float noise (``15.75``, ``3``)."""
    if source.reduce in ("sum", "min", "max") and isinstance(found, float):
        found = round(found, 6)
        return str(int(found)) if found.is_integer() else repr(found)
    return str(found)


def _select(content: Any, parts: list[str]) -> list[tuple[str, Any, Any]] | None:
    """(key at the last ``*``, the item there, the value the path reaches) for everything the path selects; a path
    without ``*`` selects the items of the list or dict it ends on. ``None`` where any branch breaks: a result
    missing a field is not in yet."""
    return _walk(content, parts if "*" in parts else [*parts, "*"], ("", None))


def _walk(content: Any, parts: list[str], at: tuple[str, Any]) -> list[tuple[str, Any, Any]] | None:
    if not parts:
        return [(at[0], at[1], content)]
    head, rest = parts[0], parts[1:]
    if head != "*":
        found = read_path(content, head)
        return None if found is None else _walk(found, rest, at)
    items = _items(content)
    if items is None:
        return None
    out: list[tuple[str, Any, Any]] = []
    for key, item in items:
        got = _walk(item, rest, (key, item))
        if got is None:
            return None
        out += got
    return out


def _items(content: Any) -> list[tuple[str, Any]] | None:
    if isinstance(content, dict):
        return [(str(k), v) for k, v in content.items()]
    if isinstance(content, list):
        return [(str(i), v) for i, v in enumerate(content)]
    return None


def _number(found: Any) -> float | int | None:
    if isinstance(found, bool):
        return None
    if isinstance(found, int | float):
        return found if math.isfinite(found) else None
    if isinstance(found, str):
        try:
            number = float(found.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _reduce(source: Source, items: list[tuple[str, Any, Any]]) -> Any:
    op = source.reduce
    if op == "count":
        return len(items)
    if op == "keys":
        return ", ".join(sorted(key for key, _, _ in items)) if items else None
    numbers = [_number(v) for _, _, v in items]
    if not items or any(n is None for n in numbers):
        return None
    if op == "sum":
        return sum(n for n in numbers if n is not None)
    if op in ("min", "max"):
        return (min if op == "min" else max)(n for n in numbers if n is not None)
    best = (max if op == "argmax" else min)(range(len(items)), key=lambda i: numbers[i] or 0)
    if numbers.count(numbers[best]) > 1:
        return None  # a tie: which one wins would depend on the order the rows came in
    key, item, _ = items[best]
    return key if source.pick is None else read_path(item, source.pick)
