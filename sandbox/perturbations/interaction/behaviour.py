"""Tier 2, Interaction, a tool that behaves differently: other units, results paged A to Z
(``behaviour_change``)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from sandbox.domains import domain_of
from sandbox.gold_plan import gold_results
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.vocab import vocabulary
from sandbox.perturbations.wrappers import (
    Route,
    ToolSpec,
    ToolsWrapper,
    clone,
    failure,
    on,
    params_of,
    with_description,
)
from sandbox.task import Task
from sandbox.tools import ToolResult

PAGE_SIZE = 2


UNITS: dict[str, tuple[str, float, float, str]] = {
    "km": ("mi", 1 / 1.609344, 0.0, "miles"),
    "c": ("f", 1.8, 32.0, "°F"),
    "kg": ("lb", 2.20462262, 0.0, "pounds"),
    "cm": ("in", 1 / 2.54, 0.0, "inches"),
}
"""Metric unit suffix of a result key (``width_cm``) → (the new suffix, factor, offset, in words): the rule that
changes units on a domain without unit tools of its own. Keys named otherwise, and whole numbers (a reader could
not tell 20 from 20.0 once converted back), keep their units."""
_UNIT_KEY = re.compile(r"^(.*_)(" + "|".join(UNITS) + r")$")


def _split_unit(key: str) -> tuple[str, str]:
    """A unit key (one :func:`unit_keys` found) split into its head and its unit: ``dist_km`` -> ``dist_``, ``km``."""
    match = _UNIT_KEY.match(key)
    assert match is not None, key
    return match.group(1), match.group(2)


def unit_keys(content: Any) -> list[str]:
    """The numeric top-level keys of an answer that name a metric unit by their suffix."""
    if not isinstance(content, dict):
        return []
    return [
        k for k, v in content.items() if _UNIT_KEY.match(k) and isinstance(v, int | float) and not isinstance(v, bool)
    ]


def unit_tools(task: Task) -> dict[str, tuple[str, ...]]:
    """Tool → its unit-named keys, by the gold plan's answers."""
    out: dict[str, tuple[str, ...]] = {}
    for call in task.plan:
        result = gold_results(domain_of(task), task).get(call.id)
        if result is not None and result.ok and unit_keys(result.content):
            out.setdefault(call.tool, tuple(unit_keys(result.content)))
    return out


def row_lists(task: Task) -> dict[str, str]:
    """Tool → the key of the list of rows its gold answer holds (what a paginated search pages), by the plan."""
    out: dict[str, str] = {}
    for call in task.plan:
        result = gold_results(domain_of(task), task).get(call.id)
        if result is not None and result.ok and isinstance(result.content, dict):
            keys = [k for k, v in result.content.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
            if len(keys) == 1:
                out.setdefault(call.tool, keys[0])
    return out


class _Behaviour(ToolsWrapper):
    @property
    def per_task(self) -> bool:
        return vocabulary(self.domain) is None

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        own = vocabulary(self.domain)
        units = own.unit_tools if own is not None else tuple(unit_tools(self.task))
        if own is not None:
            pages = {name: ("results", own.rank_by is not None) for name in own.searches}
        else:
            pages = {name: (key, False) for name, key in row_lists(self.task).items()}
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            if name in units:
                if own is None:
                    changed = sorted({UNITS[_split_unit(k)[1]][3] for k in unit_tools(self.task)[name]})
                    note = f"Now reports {' and '.join(changed)} (keys renamed to match)."
                elif "km" in spec["function"]["description"]:
                    note = "Now reports miles (mi), not km."
                else:
                    note = "Now reports °F (temp_f)."
                spec = with_description(spec, f"{spec['function']['description']} {note}")
                routes.append(Route(spec, handler=on(self._units, name)))
            elif name in pages and self.spec.severity >= 2:
                key, alphabetical = pages[name]
                order = "in alphabetical order" if alphabetical else "in the same order"
                spec = clone(spec)
                spec["function"]["description"] += (
                    f" Results now come {PAGE_SIZE} per page {order}; pass page for more."
                )
                params_of(spec)["properties"]["page"] = {"type": "integer", "description": "page number (default 1)"}
                routes.append(Route(spec, handler=on(self._pages, name, key, alphabetical)))
            else:
                routes.append(Route(spec, target=name))
        return routes

    def _units(self, arguments: Any, name: str) -> ToolResult:
        result = self.env.call(name, arguments)
        if not result.ok or not isinstance(result.content, dict):
            return result
        content = dict(result.content)
        if vocabulary(self.domain) is None:
            for key in unit_keys(content):
                head, unit = _split_unit(key)
                new, factor, offset, _ = UNITS[unit]
                content[head + new] = round(content.pop(key) * factor + offset, 6)
            return result.model_copy(update={"content": content})
        if "km" in content:
            content = {"mi": round(content.pop("km") / 1.609344, 3), **content}
        if "temp_c" in content:
            content["temp_f"] = round(content.pop("temp_c") * 1.8 + 32, 1)
        return result.model_copy(update={"content": content})

    def _pages(self, arguments: Any, name: str, key: str, alphabetical: bool) -> ToolResult:
        page = 1
        if isinstance(arguments, dict) and "page" in arguments:
            arguments = dict(arguments)
            page = arguments.pop("page")
            if not isinstance(page, int) or isinstance(page, bool) or page < 1:
                return failure(name, "invalid_arguments", "'page': must be a whole number from 1")
        result = self.env.call(name, arguments)
        if not result.ok or not isinstance(result.content, dict) or key not in result.content:
            return result
        rows = result.content[key]
        if alphabetical:
            rows = sorted(rows, key=lambda row: str(row.get("name")))
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        chunk = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return result.model_copy(update={"content": {key: chunk, "page": page, "pages": pages}})


@register
class BehaviourChange(Perturbation):
    name: ClassVar[str] = "behaviour_change"
    tier = "interaction"
    shift = "observation"
    paft_family = "error_feedback"
    summary = (
        "1: distance in miles and temperature in °F, as documented; 2: + searches paginated, A to Z (a domain "
        "without unit tools of its own: keys ending _km, _c, _kg, _cm converted; lists of rows paginated in order)"
    )
    expected = "read the documented change: convert units, fetch every page and rank by rating"
    max_severity = 2
    limits = (
        "a task without the domain's unit tools or searches; on a domain without unit tools of its own, a plan whose "
        "answers have no key with a metric suffix (and, at severity 2, no list of rows)"
    )
    layer = "behaviour"

    def applies_to(self, task: Task) -> bool:
        tools, own = {c.tool for c in task.plan}, vocabulary(task.domain)
        if own is None:  # the plan's answers show what changes: unit-named keys, lists of rows
            return bool(unit_tools(task)) or (self.severity >= 2 and bool(row_lists(task)))
        return bool(tools & set(own.unit_tools)) or (self.severity >= 2 and bool(tools & set(own.searches)))

    wrapper = _Behaviour

    def extra_turns(self) -> int:
        return self.severity - 1
