"""Tier 3, Reasoning: the dependency structure of the tool chain changes, as the specs document."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from sandbox.budget import user_turns
from sandbox.domains import domain_of
from sandbox.gold_plan import Dependency, dependencies, every_use_carries, writes
from sandbox.perturbations import vocab
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
    unique_name,
    with_description,
)
from sandbox.seeds import child_seed
from sandbox.task import Task, read_path
from sandbox.tools import ToolResult
from sandbox.vocabulary import DomainVocabulary


def _links(domain: Any, task: Task, merging: bool = False) -> dict[str, tuple[str, str, str]]:
    """Consumer tool → (the lookup that gives its id, the id parameter, where the id is in the lookup's
    result): the domain's vocabulary where it has one, else what the gold plan shows (on a task of several user
    turns, only the dependencies :func:`_turn_links` keeps)."""
    words = vocabulary(domain)
    if words is not None:
        return {tool: (finder, param, "id") for tool, (finder, param) in words.consumers.items()}
    deps = dependencies(domain_of(task), task)
    deps = _turn_links(task, deps, merging) if user_turns(task) is not None else _plan_links(task, deps, merging)
    if merging:
        deps = tuple(d for d in deps if not _clash(task, d))
    return {d.consumer: (d.lookup, d.param, d.path) for d in deps}


def _clash(task: Task, d: Dependency) -> bool:
    """Whether the lookup takes an argument of the same name as one the consumer keeps: the merged tool, which
    takes both, could not tell them apart."""
    params = {t.name: set(t.spec["function"]["parameters"].get("properties", {})) for t in domain_of(task).tools}
    return bool(params.get(d.lookup, set()) & (params.get(d.consumer, set()) - {d.param}))


def _plan_links(task: Task, deps: tuple[Dependency, ...], merging: bool) -> tuple[Dependency, ...]:
    """The dependencies that a new tool carries as the request says: the value is the first row's where it is in a
    list (the top result; one from a later row was picked by what the rows hold, an argmax or a set difference,
    which a tool given only the lookup's arguments cannot know), every call of the consumer takes its value so
    (:func:`~sandbox.gold_plan.every_use_carries`), and, to merge, the lookup takes arguments."""

    def carried(d: Dependency) -> bool:
        return (
            not any(part.isdigit() and part != "0" for part in d.path.split("."))
            and every_use_carries(domain_of(task), task, d)
            and not (merging and any(not c.args for c in task.plan if c.tool == d.lookup))
        )

    return tuple(d for d in deps if carried(d))


def _turn_links(task: Task, deps: tuple[Dependency, ...], merging: bool) -> tuple[Dependency, ...]:
    """The dependencies of a task of several user turns that a new tool carries as the request says (PLAN_LINKS):
    every call of the consumer comes right after a call of the lookup in the same turn and takes its value from one
    (:func:`~sandbox.gold_plan.every_use_carries`), the lookup writes nothing
    (and, to merge, takes arguments), and the value is not taken by its place in a list."""
    turns, writing = user_turns(task) or [], writes(domain_of(task), task)
    plan = list(zip(task.plan, turns, strict=True))

    def carried(d: Dependency) -> bool:
        uses = [i for i, (c, _) in enumerate(plan) if c.tool == d.consumer]
        return (
            d.lookup not in writing
            and not any(p.isdigit() for p in d.path.split("."))
            and all(i > 0 and plan[i - 1][0].tool == d.lookup and plan[i - 1][1] == plan[i][1] for i in uses)
            and every_use_carries(domain_of(task), task, d)
            and not (merging and any(not plan[i - 1][0].args for i in uses))
        )

    return tuple(d for d in deps if carried(d))


PLAN_LINKS = (
    "a task whose gold plan shows no call taking a value that a call before it returned, other than one taken from "
    "a row after the first of a list (picked by what the rows hold, an argmax or a set difference: the new tool "
    "would pick by place, not by what the user names) or one taken by a tool that another call of the plan gives a "
    "value no answer of the lookup holds there (another row, the user's own, one computed from results: the new "
    "tool could not make that call). On a task of several user turns (bfcl), also one whose only "
    "such values are the id a write returned (a booking's, a post's: the write would run again), an entry taken by "
    "its place in a list (`ls`'s first), or a value a lookup of an earlier turn returned (the new tool would need "
    "that turn's request again)"
)
MERGE_LINKS = PLAN_LINKS + (
    "; and, to merge, a lookup that takes no arguments (the merged tool would take none) or one of the same name as "
    "an argument the call keeps (the merged tool would take both)"
)


def _uses_consumer(task: Task, merging: bool = False) -> bool:
    links = _links(task.domain, task, merging)
    return any(c.tool in links for c in task.plan)


class _Linked(ToolsWrapper):
    """A wrapper over the dependencies of :func:`_links`: built once per spec for a domain with vocabulary,
    once per task where the plan shows them."""

    @property
    def per_task(self) -> bool:
        return vocabulary(self.domain) is None

    merging = False

    def links(self) -> dict[str, tuple[str, str, str]]:
        return _links(self.domain, self.task, self.merging)


def _split(arguments: Any, keys: set[str]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    if not isinstance(arguments, dict):
        return None
    return {k: v for k, v in arguments.items() if k in keys}, {k: v for k, v in arguments.items() if k not in keys}


class _Merge(_Linked):
    merging = True

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        by_name = {s["function"]["name"]: s for s in specs}
        taken, routes, links = set(by_name), [], self.links()
        for spec in specs:
            name = spec["function"]["name"]
            finder, id_param, path = links.get(name, (None, None, None))
            if finder not in by_name:
                routes.append(Route(spec, target=name))
                continue
            merged = unique_name(self.words(vocab.MERGED_NAMES)[0].format(name=name), taken)
            notes = vocab.MERGED_NOTES if vocabulary(self.domain) is not None else vocab.MERGED_PLAN_NOTES
            note = self.words(notes)[0].format(lookup=finder)
            new = with_description(spec, f"{spec['function']['description']} {note}", name=merged)
            look, own = params_of(by_name[finder]), params_of(spec)
            rest = {k: v for k, v in own["properties"].items() if k != id_param}
            params_of(new)["properties"] = {**clone(look["properties"]), **rest}
            params_of(new)["required"] = [*look["required"], *(p for p in own["required"] if p != id_param)]
            routes.append(
                Route(new, handler=on(self._merged, merged, finder, name, id_param, set(look["properties"]), path))
            )
        return routes

    def _merged(
        self, arguments: Any, merged: str, finder: str, name: str, id_param: str, find_keys: set[str], path: str
    ) -> ToolResult:
        parts = _split(arguments, find_keys)
        if parts is None:
            return failure(merged, "invalid_arguments", "arguments must be a JSON object")
        found = self.env.call(finder, parts[0])
        if not found.ok:
            return found
        return self.env.call(name, {**parts[1], id_param: read_path(found.content, path)})


@register
class DependencyMerge(Perturbation):
    name: ClassVar[str] = "dependency_merge"
    tier = "reasoning"
    shift = "action"
    paft_family = ""
    summary = "a lookup and the call that needed the id it returns become one tool that takes the lookup's arguments"
    expected = "use the merged tool in one step instead of the remembered two"
    limits = MERGE_LINKS
    layer = "merge"

    def applies_to(self, task: Task) -> bool:
        return _uses_consumer(task, merging=True)

    wrapper = _Merge


class _Invert(_Linked):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        by_name = {s["function"]["name"]: s for s in specs}
        param = self.words(vocab.INVERSION_PARAMS)[0]
        inverted: dict[str, list[str]] = {}
        routes: dict[str, Route] = {}
        self._ids = links = self.links()
        for spec in specs:
            name = spec["function"]["name"]
            finder, id_param, _ = links.get(name, (None, None, None))
            if finder is None or finder not in by_name:
                routes[name] = Route(spec, target=name)
                continue
            inverted.setdefault(finder, []).append(name)
            note = self.words(vocab.INVERSION_NOTES)[0].format(param=param, finder=finder)
            new = with_description(spec, f"{spec['function']['description']} {note}")
            own = params_of(new)
            own["properties"] = {k: v for k, v in own["properties"].items() if k != id_param}
            own["required"] = [p for p in own["required"] if p != id_param]
            routes[name] = Route(new, handler=on(self._request, name, set(own["properties"]), param))
        for finder, tools in inverted.items():
            spec = by_name[finder]
            note = self.words(vocab.INVERSION_FINDER_NOTES)[0].format(param=param, tools=", ".join(tools))
            new = with_description(spec, f"{spec['function']['description']} {note}")
            request = {"type": "string", "description": f"{param} from {', '.join(tools)} (optional)"}
            params_of(new)["properties"] = {**params_of(new)["properties"], param: request}
            routes[finder] = Route(new, handler=on(self._run, finder, param))
        return [routes[s["function"]["name"]] for s in specs]

    def _request(self, arguments: Any, name: str, keys: set[str], param: str) -> ToolResult:
        if not isinstance(arguments, dict):
            return failure(name, "invalid_arguments", "arguments must be a JSON object")
        unknown = sorted(set(arguments) - keys)
        if unknown:
            return failure(name, "invalid_arguments", f"unexpected argument '{unknown[0]}'")
        blob = json.dumps([name, arguments], sort_keys=True, default=str)
        handle = f"RQ-{child_seed(self.spec.seed, blob) % 10**6:06d}"
        self.scratch[handle] = (name, dict(arguments))
        return ToolResult(name=name, content={param: handle})

    def _run(self, arguments: Any, finder: str, param: str) -> ToolResult:
        if not isinstance(arguments, dict) or param not in arguments:
            return self.env.call(finder, arguments)
        arguments = dict(arguments)
        pending = self.scratch.get(arguments.pop(param))
        if pending is None:
            return failure(finder, "invalid_arguments", f"unknown {param}; get one first")
        found = self.env.call(finder, arguments)
        if not found.ok:
            return found
        name, rest = pending
        _, id_param, path = self._ids[name]
        return self.env.call(name, {**rest, id_param: read_path(found.content, path)})


@register
class LogicInversion(Perturbation):
    name: ClassVar[str] = "logic_inversion"
    tier = "reasoning"
    shift = "action"
    paft_family = ""
    summary = "the order reverses: the call that needed an id comes first, and the lookup then runs it"
    expected = "follow the documented new order instead of the remembered one"
    limits = PLAN_LINKS
    layer = "inversion"

    def applies_to(self, task: Task) -> bool:
        return _uses_consumer(task)

    wrapper = _Invert

    def extra_turns(self) -> int:
        return 1


class _Token(ToolsWrapper):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = [s["function"]["name"] for s in specs]
        if self.spec.severity >= 2:
            guarded = set(names)
        else:
            # the plan's first write, else its last call: chosen from the plan, so a tool offered later (bfcl)
            # does not move the guard
            plan = [c.tool for c in self.task.plan]
            writing = writes(self.domain, self.task)
            target = next((t for t in plan if t in writing), plan[-1] if plan else None)
            shown = [n for n in names if n == target] or [n for n in names if target and n.startswith(target + "_")]
            guarded = set(shown[:1])
        tool_name, description = self.words(vocab.TOKEN_TOOLS)[0]
        self.tool = unique_name(tool_name, set(names))
        param, param_text = self.words(vocab.TOKEN_PARAMS)[0]
        self.token = f"tk-{self.rng().randrange(10**6):06d}"
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            if name not in guarded:
                routes.append(Route(spec, target=name))
                continue
            spec = clone(spec)
            params_of(spec)["properties"][param] = {"type": "string", "description": param_text.format(tool=self.tool)}
            params_of(spec)["required"].append(param)
            routes.append(Route(spec, handler=on(self._guard, name, param)))
        issue = {"type": "function", "function": {"name": self.tool, "description": description,
                 "parameters": {"type": "object", "properties": {}, "required": []}}}  # fmt: skip
        return [Route(issue, handler=lambda w, _a: ToolResult(name=w.tool, content={"token": w.token})), *routes]

    def _guard(self, arguments: Any, name: str, param: str) -> ToolResult:
        if not isinstance(arguments, dict):
            return failure(name, "invalid_arguments", "arguments must be a JSON object")
        if param not in arguments:
            return failure(name, "invalid_arguments", f"missing argument '{param}' (get it from {self.tool})")
        arguments = dict(arguments)
        if arguments.pop(param) != self.token:
            return failure(name, "invalid_arguments", f"invalid {param}; get one from {self.tool}")
        return self.env.call(name, arguments)


@register
class DependencySplit(Perturbation):
    name: ClassVar[str] = "dependency_split"
    tier = "reasoning"
    shift = "action"
    paft_family = ""
    summary = "a call now needs a token from a new tool first (1: the write or last call; 2: every tool)"
    expected = "get the token as documented, then make the call with it"
    max_severity = 2
    layer = "split"

    needs_calls = True

    wrapper = _Token

    def extra_turns(self) -> int:
        return 1


class _Restructure(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        nested, nested_text = self.words(vocab.NESTED_PARAMS)[0]
        own = vocabulary(self.domain)
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            inner = clone(params_of(spec))
            props = inner["properties"]
            if not props:
                routes.append(Route(spec, target=name))
                continue
            pair = _pair(inner, own) if self.spec.severity >= 2 else None
            joined = None
            if pair is not None:
                slot, slot_text, separator = self._slot(pair, own)
                props.pop(pair[0]), props.pop(pair[1])
                props[slot] = {"type": "string", "description": slot_text}
                inner["required"] = [p for p in inner["required"] if p not in pair] + [slot]
                joined = (slot, separator, *pair)
            new = with_description(spec, spec["function"]["description"])
            params_of(new)["properties"] = {nested: {"type": "object", "description": nested_text, **inner}}
            params_of(new)["required"] = [nested]
            routes.append(Route(new, handler=on(self._unpack, name, nested, joined)))
        return routes

    def _slot(self, pair: tuple[str, str], own: DomainVocabulary | None) -> tuple[str, str, str]:
        if own is not None:
            slot, text = self.words(vocab.SLOT_PARAMS)[0]
            return slot, text, text.split("'DAY")[1][0]
        slot, text = self.words(vocab.PAIR_PARAMS)[0]
        separator = text.split("'{A}")[1][0]
        a, b = pair
        return slot.format(a=a, b=b), text.format(a=a, b=b, A=a.upper(), B=b.upper()), separator

    def _unpack(self, arguments: Any, name: str, nested: str, joined: tuple[str, str, str, str] | None) -> ToolResult:
        if not isinstance(arguments, dict) or set(arguments) != {nested} or not isinstance(arguments[nested], dict):
            return failure(name, "invalid_arguments", f"give exactly one argument '{nested}', an object")
        args = dict(arguments[nested])
        if joined is not None and joined[0] in args:
            slot, separator, a, b = joined
            first, _, second = str(args.pop(slot)).partition(separator)
            args.update({a: first, b: second})
        return self.env.call(name, args)


def _pair(schema: dict[str, Any], own: DomainVocabulary | None) -> tuple[str, str] | None:
    """The two arguments severity 2 joins into one value: the domain's pair (a day and a time), else a tool's
    last two required string arguments."""
    props = schema["properties"]
    if own is not None:
        return own.compound if own.compound and set(own.compound) <= set(props) else None
    strings = [p for p in schema.get("required", []) if props.get(p, {}).get("type") == "string"]
    return (strings[-2], strings[-1]) if len(strings) >= 2 else None


@register
class ArgumentRestructuring(Perturbation):
    name: ClassVar[str] = "argument_restructuring"
    tier = "reasoning"
    shift = "action"
    paft_family = ""
    summary = (
        "1: every tool takes its arguments nested in one object; 2: + day and time as one compound value (a domain "
        "without its own pair: a tool's last two required strings)"
    )
    expected = "build the arguments in the documented shape"
    max_severity = 2
    layer = "restructure"

    needs_calls = True

    wrapper = _Restructure
