"""Evolution of tools: deprecated with a named successor, split in two (or three) by an enum, descriptions
rewritten for a release."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.evolution.params import plan_specs
from sandbox.perturbations.perception.tools import DescriptionRewrite, Rewriter
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import (
    Route,
    ToolSpec,
    ToolsWrapper,
    clone,
    failure,
    on,
    params_of,
    unique_name,
    with_description,
)
from sandbox.task import Task
from sandbox.tools import ToolResult

# A tool deprecated, with a successor.


class _Deprecated(ToolsWrapper):
    """Mentions of an old tool in descriptions and messages name its successor, as the new release's docs do."""

    per_task = False
    renames_text = True

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        level, taken = self.spec.severity, {s["function"]["name"] for s in specs}
        routes, self._replaces = [], {}
        for spec in specs:
            old, desc = spec["function"]["name"], spec["function"]["description"]
            new = unique_name(self.words(vocab.SUCCESSOR_NAMES)[0].format(name=old), taken)
            if level < 3:
                note = self.words(vocab.DEPRECATION_NOTES)[0].format(new=new, desc=desc).strip()
                message = self.words(vocab.REMOVAL_ERRORS)[0].format(old=old, new=new)
                gone = on(self._removed, old, message) if level == 2 else None
                routes.append(Route(with_description(spec, note), target=old, handler=gone))
            else:
                self._replaces[new] = old
            routes.append(Route(with_description(spec, desc, name=new), target=old))
        return routes

    def _build(self, inner: list[ToolSpec]) -> None:
        super()._build(inner)
        routes = self._routes
        assert routes is not None  # super()._build just set them
        for new, old in self._replaces.items():  # written after the mentions are renamed: it names the old tool
            route = routes[new]
            text = self.words(vocab.SUCCESSOR_NOTES)[0].format(desc=route.spec["function"]["description"], old=old)
            route.spec = with_description(route.spec, text.strip())

    def _removed(self, arguments: Any, old: str, message: str) -> ToolResult:
        return failure(old, "moved", message)

    def visible_result(self, name: str, route: Route, result: ToolResult) -> ToolResult:
        if route.handler is not None:  # the removed tool's answer names the old tool and its successor as they are
            return result.model_copy(update={"name": name})
        return super().visible_result(name, route, result)


@register
class ToolDeprecated(Perturbation):
    name: ClassVar[str] = "tool_deprecated"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = (
        "every tool gets a successor under a new name (1: the old one still works, documented as deprecated; 2: "
        "the old one answers that it was removed, naming the successor; 3: the old one is gone)"
    )
    expected = "call the successor the release names"
    mild = "at severity 1 the deprecated tools still work"
    max_severity = 3
    needs_calls = True
    layer = "decoys"

    wrapper = _Deprecated


# A tool split in parts, each taking some of an enum's values.


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def split_param(spec: ToolSpec) -> str | None:
    """The parameter a tool splits by: its first top-level enum of two strings or more."""
    for pname, prop in params_of(spec).get("properties", {}).items():
        values = prop.get("enum")
        if isinstance(values, list) and len(values) >= 2 and all(isinstance(v, str) for v in values):
            return pname
    return None


class _Split(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        taken, routes = {s["function"]["name"] for s in specs}, []
        for spec in specs:
            name, param = spec["function"]["name"], split_param(spec)
            if param is None:
                routes.append(Route(spec, target=name))
                continue
            values = params_of(spec)["properties"][param]["enum"]
            k = 2 if self.spec.severity == 1 else min(3, len(values))
            parts = [tuple(values[i * len(values) // k : (i + 1) * len(values) // k]) for i in range(k)]
            pattern = self.words(vocab.SPLIT_NAMES)[0]
            names = [name] + [unique_name(_UNSAFE.sub("_", pattern.format(name=name, first=p[0], last=p[-1]))[:128],
                                          taken) for p in parts[1:]]  # fmt: skip
            served = tuple(zip(names, parts, strict=True))
            for new, part in served:
                part_spec = clone(with_description(spec, spec["function"]["description"], name=new))
                params_of(part_spec)["properties"][param]["enum"] = list(part)
                routes.append(Route(part_spec, target=name, handler=on(self._call, name, param, part, served)))
        return routes

    def _call(self, arguments: Any, target: str, param: str, part: tuple[str, ...], served: tuple) -> ToolResult:
        value = arguments.get(param) if isinstance(arguments, dict) else None
        other = next((n for n, values in served if value in values), None)
        if value not in part and other is not None:
            message = self.words(vocab.SPLIT_ERRORS)[0].format(
                param=param, values=", ".join(part), value=value, other=other
            )
            return failure(target, "invalid_arguments", message)
        return self.env.call(target, arguments)


@register
class ToolSplit(Perturbation):
    name: ClassVar[str] = "tool_split"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = (
        "a tool that takes an enum keeps the first share of its values, and a new tool documented alike takes each "
        "other share (1: two tools; 2: three)"
    )
    expected = "call the tool whose schema accepts the value the request needs"
    max_severity = 2
    needs_calls = True
    limits = "a task whose tools take no enum of two strings or more"
    layer = "split"

    def applies_to(self, task: Task) -> bool:
        return any(split_param(spec) is not None for spec in plan_specs(task))

    wrapper = _Split


# Descriptions rewritten for a release.


_TEMPLATES = vocab.PARAM_DESCRIPTION_TEMPLATES


class _Release(Rewriter):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        routes, level = super().build(specs), self.spec.severity
        for route in routes:
            spec = route.spec
            if level >= 2:
                spec = with_description(spec, spec["function"]["description"])
                parameters = params_of(spec)
                parameters["properties"] = props = clone(parameters.get("properties", {}))
                template = self.rng(spec["function"]["name"], "params").choice(self.words(_TEMPLATES))
                for prop in props.values():
                    if prop.get("description"):
                        prop["description"] = template.format(desc=prop["description"])
            if level >= 3:
                note = self.words(vocab.CHANGELOG_NOTES)[0]
                spec = with_description(spec, f"{spec['function']['description']} {note}".strip())
            route.spec = spec
        return routes


@register
class DescriptionRelease(Perturbation):
    name: ClassVar[str] = "description_release"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = (
        "descriptions rewritten by a release (1: tools' reworded as description_rewrite does; 2: + parameters' "
        "reworded; 3: + a changelog line)"
    )
    expected = "read the rewritten documentation by what it says"
    mild = "the static agent never reads descriptions, so a rewrite alone cannot hurt it; it hurts agents that do"
    max_severity = 3
    layer = "descriptions"

    def applies_to(self, task: Task) -> bool:
        if self.severity >= 3 or DescriptionRewrite(pool=self.pool).applies_to(task):
            return True
        return self.severity >= 2 and any(
            p.get("description") for s in plan_specs(task) for p in params_of(s).get("properties", {}).values()
        )

    wrapper = _Release
