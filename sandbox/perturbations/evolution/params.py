"""Evolution of parameters: renamed by case style, added (with a default, or required), an enum widened."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from sandbox.domains import domain_of
from sandbox.identifiers import restyle, swapped
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import (
    Route,
    ToolSpec,
    ToolsWrapper,
    clone,
    failure,
    on,
    params_of,
    rename_params,
    unique_name,
    with_description,
)
from sandbox.task import Task
from sandbox.tools import ToolResult


def plan_specs(task: Task) -> Iterator[ToolSpec]:
    """The clean specs of the tools the task's gold plan calls."""
    used = {c.tool for c in task.plan}
    yield from (t.spec for t in domain_of(task).tools_for(task) if t.name in used)


def enums(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every property of a schema (nested objects' too) that takes one of a list of two strings or more (one of a
    single value is a constant, not a choice)."""
    for prop in schema.get("properties", {}).values():
        values = prop.get("enum")
        if isinstance(values, list) and len(values) >= 2 and all(isinstance(v, str) for v in values):
            yield prop
        if prop.get("type") == "object":
            yield from enums(prop)


# Parameters renamed by case style.


def _restyle(severity: int) -> Callable[[str], str]:
    return swapped if severity == 1 else lambda name: restyle(name, "pascal")


class _CaseStyle(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        style, routes = _restyle(self.spec.severity), []
        for spec in specs:
            props = list(params_of(spec).get("properties", {}))
            taken, mapping = set(props), {}
            for p in props:
                new = style(p)
                if new != p and new not in taken:
                    mapping[p] = new
                    taken.add(new)
            visible = {mapping.get(p, p): p for p in props}
            routes.append(Route(rename_params(spec, mapping), target=spec["function"]["name"],
                                params=visible if mapping else None))  # fmt: skip
        return routes


@register
class ParamCaseStyle(Perturbation):
    name: ClassVar[str] = "param_case_style"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = "parameters renamed by case style, as releases do (1: snake_case ↔ camelCase; 2: PascalCase, every one)"
    expected = "fill arguments by the names the schema now gives"
    max_severity = 2
    needs_calls = True
    limits = "severity 1: a task whose tools take only one-word parameters (their name has no other style)"
    layer = "schema"

    def applies_to(self, task: Task) -> bool:
        style = _restyle(self.severity)
        return any(style(p) != p for spec in plan_specs(task) for p in params_of(spec).get("properties", {}))

    wrapper = _CaseStyle


# A parameter added.


class _Added(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            pname, about, value = self.rng(name).choice(self.words(vocab.ADDED_PARAMS))
            new = with_description(spec, spec["function"]["description"])
            parameters = params_of(new)
            props = dict(parameters.get("properties", {}))
            pname = unique_name(pname, set(props))
            if self.spec.severity == 1:
                props[pname] = {"type": "string", "description": f"{about} (optional)", "default": value}
            else:
                note = self.words(vocab.ADDED_PARAM_NOTES)[0].format(value=value)
                props[pname] = {"type": "string", "description": f"{about}. {note}", "enum": [value]}
                parameters["required"] = [*parameters.get("required", []), pname]
            parameters["properties"] = props
            routes.append(Route(new, target=name, handler=on(self._call, name, pname, value)))
        return routes

    def _call(self, arguments: Any, target: str, pname: str, value: str) -> ToolResult:
        if not isinstance(arguments, dict):
            return self.env.call(target, arguments)
        if self.spec.severity >= 2 and arguments.get(pname) != value:
            given = "missing" if pname not in arguments else f"{arguments[pname]!r} is not accepted"
            return failure(target, "invalid_arguments", f"required argument '{pname}': {given}; it must be '{value}'")
        return self.env.call(target, {k: v for k, v in arguments.items() if k != pname})


@register
class ParamAdded(Perturbation):
    name: ClassVar[str] = "param_added"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = (
        "every tool takes a new parameter (1: optional, with a default; 2: required, its one accepted value in its "
        "enum and its description)"
    )
    expected = "leave an optional new parameter out, and give a required one the value the schema documents"
    mild = "severity 1 changes nothing for a call by the old schema"
    max_severity = 2
    needs_calls = True
    layer = "schema"

    wrapper = _Added


# An enum widened.


class _Widened(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            new, r = clone(spec), self.rng(name)
            for prop in enums(params_of(new)):
                values = list(prop["enum"])
                extra = [v for v in self.words(vocab.WIDENED_VALUES) if v not in values]
                if self.spec.severity >= 2:
                    r.shuffle(values)
                    values = extra + values
                else:
                    values += extra
                prop["enum"] = values
            routes.append(Route(new, target=name))
        return routes


@register
class EnumWidened(Perturbation):
    name: ClassVar[str] = "enum_widened"
    tier = "perception"
    shift = "action"
    paft_family = ""
    summary = "every enum of strings takes new values (1: added last; 2: added first, the old ones in another order)"
    expected = "pick the value the request names, not one by its place in the list"
    mild = "every old value is still accepted: it hurts only an agent that picks a value by its place"
    max_severity = 2
    needs_calls = True
    limits = "a task whose tools take no enum of strings"
    layer = "schema"

    def applies_to(self, task: Task) -> bool:
        return any(True for spec in plan_specs(task) for _ in enums(params_of(spec)))

    wrapper = _Widened
