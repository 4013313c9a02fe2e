"""Evolution of results: fields renamed by case style, documented in each tool's description as a release
note (``old → new``), as a server's ``outputSchema`` would show them."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from sandbox.domains import domain_of
from sandbox.gold_plan import gold_results
from sandbox.identifiers import rename_keys, swapped
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import Route, ToolSpec, ToolsWrapper, on, with_description
from sandbox.task import Task
from sandbox.tools import ToolResult

_KEY = re.compile(r"[\w-]+")
"""A key a release note can name (``old → new``)."""


def _keys(content: Any, deep: bool) -> list[str]:
    if isinstance(content, list):
        return [k for item in content for k in _keys(item, deep)] if deep else []
    if not isinstance(content, dict):
        return []
    return [*content, *(k for v in content.values() for k in _keys(v, deep) if deep)]


def renames(task: Task, deep: bool) -> dict[str, dict[str, str]]:
    """For each tool of the gold plan, its result fields (as the clean tools answer) that change style."""
    results, out = gold_results(domain_of(task), task), dict[str, dict[str, str]]()
    for call in task.plan:
        result = results.get(call.id)
        if result is None or not result.ok:
            continue
        keys = set(_keys(result.content, deep))
        mapping = out.setdefault(call.tool, {})
        for key in sorted(keys):
            new = swapped(key)
            if new != key and new not in keys and _KEY.fullmatch(key):
                mapping[key] = new
    return {tool: mapping for tool, mapping in out.items() if mapping}


class _Fields(ToolsWrapper):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        deep, found, routes = self.spec.severity >= 2, renames(self.task, self.spec.severity >= 2), []
        for spec in specs:
            name, desc = spec["function"]["name"], spec["function"]["description"]
            mapping = found.get(name)
            if not mapping:
                routes.append(Route(spec, target=name))
                continue
            pairs = ", ".join(f"{old} → {new}" for old, new in mapping.items())
            note = self.words(vocab.FIELD_NOTES)[0].format(pairs=pairs)
            routes.append(Route(with_description(spec, f"{desc} {note}".strip()), target=name,
                                handler=on(self._call, name, mapping, deep)))  # fmt: skip
        return routes

    def _call(self, arguments: Any, target: str, mapping: dict[str, str], deep: bool) -> ToolResult:
        result = self.env.call(target, arguments)
        if not result.ok:
            return result
        return result.model_copy(update={"content": rename_keys(result.content, mapping, deep)})


@register
class ResultFieldRenamed(Perturbation):
    name: ClassVar[str] = "result_field_renamed"
    tier = "interaction"
    shift = "observation"
    paft_family = ""
    summary = (
        "result fields renamed by case style (snake_case ↔ camelCase), each tool's release note listing them "
        "(1: top-level fields; 2: at every depth, rows of lists too)"
    )
    expected = "read values under their new names, as the tool documents them"
    mild = "a field of one word keeps its name, so only answers read from a field of several words change"
    max_severity = 2
    needs_calls = True
    limits = "a task none of whose gold answers has a field of more than one word (at severity 1, at the top)"
    layer = "format"

    def applies_to(self, task: Task) -> bool:
        return bool(task.plan) and bool(renames(task, self.severity >= 2))

    wrapper = _Fields
