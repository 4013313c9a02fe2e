"""Wrapper bases that perturbations build on, one per surface (Gymnasium's wrapper idea).

``QueryWrapper`` rewrites the request, ``ToolsWrapper`` rewrites the tool set and translates
each call back to the names of the env it wraps, ``CallWrapper`` changes how calls are
dispatched, ``ObservationWrapper`` changes what successful calls return. Every call reaches the
base env in canonical names, so ``env.state.writes`` stays canonical for the judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox.env import Env, Wrapper
from sandbox.seeds import rng
from sandbox.tools import ErrorKind, ToolResult

if TYPE_CHECKING:
    import random

    from sandbox.perturbations.base import Perturbation

ToolSpec = dict[str, Any]


def clone(value: Any) -> Any:
    """A deep copy of JSON-like data (much faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def failure(name: str, kind: ErrorKind, message: str) -> ToolResult:
    return ToolResult(name=name, error=kind, message=message)


def on(method: Callable[..., ToolResult], *bound: Any) -> Callable[[Any, Any], ToolResult]:
    """A route handler that runs ``method`` on whichever wrapper dispatches the call, with ``bound`` after
    the arguments: routes hold no wrapper, so one build serves every env of the same spec."""
    fn = method.__func__  # type: ignore[attr-defined]  # a bound method: Callable does not say so
    return lambda wrapper, arguments: fn(wrapper, arguments, *bound)


def params_of(spec: ToolSpec) -> dict[str, Any]:
    return spec["function"]["parameters"]


class PerturbationWrapper(Wrapper):
    """A wrapper made by a perturbation spec: it labels itself with the spec and draws from its seed."""

    def __init__(self, env: Env, spec: Perturbation) -> None:
        super().__init__(env)
        self.spec = spec
        self.label = spec.label()
        self._key = f"{len(env.wrappers())}:{self.label}"

    @property
    def scratch(self) -> dict[str, Any]:
        """Per-episode room for this wrapper (a call counter); ``reset`` clears it."""
        return self.state.scratch.setdefault(self._key, {})

    @property
    def per_task(self) -> bool:
        """Whether draws depend on the task; a tool set that does not is built once per spec and cached."""
        return True

    def rng(self, *parts: object) -> random.Random:
        task = self.task.id if self.per_task else ""
        return rng(self.spec.seed, self.spec.name, self.spec.pool, task, *parts)

    def words(self, vocabulary: Mapping[str, tuple[Any, ...]]) -> tuple[Any, ...]:
        return vocabulary[self.spec.pool]


class QueryWrapper(PerturbationWrapper):
    def query(self) -> str:
        return self.rewrite(self.env.query())

    def rewrite(self, query: str) -> str:
        raise NotImplementedError


class CallWrapper(PerturbationWrapper):
    """Changes how a call is dispatched; subclasses override ``call``."""


class ObservationWrapper(PerturbationWrapper):
    """Changes the content of successful results; ``skip_writes`` leaves alone the results of write actions and
    of tools whose role nobody knows (``Tool.role_known``: they may have written)."""

    skip_writes = False

    def call(self, name: str, arguments: Any) -> ToolResult:
        state = self.state
        before = (len(state.writes), len(getattr(state, "unsure", ())))
        result = self.env.call(name, arguments)
        if not result.ok or (self.skip_writes and (len(state.writes), len(getattr(state, "unsure", ()))) != before):
            return result
        return result.model_copy(update={"content": self.observation(name, result.content)})

    def observation(self, name: str, content: Any) -> Any:
        raise NotImplementedError


@dataclass
class Route:
    """One visible tool: its spec and how a call to it reaches the inner env.

    ``params`` maps visible argument names to inner ones (``None``: the same names); ``drop``
    names optional arguments that are accepted and ignored; ``handler`` replaces dispatch.
    """

    spec: ToolSpec
    target: str | None = None
    params: dict[str, str] | None = None
    drop: frozenset[str] = frozenset()
    handler: Callable[[Any, Any], ToolResult] | None = None
    """Called as ``handler(wrapper, arguments)``: it must not hold on to a wrapper, so routes can be shared."""
    inner_params: dict[str, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.inner_params = {v: k for k, v in (self.params or {}).items()}


_BUILDS: dict[tuple[Any, ...], tuple[list[ToolSpec], dict[str, Any]]] = {}
_MAX_BUILDS = 4096
_BUILT = ("_routes", "_text_map", "_text_re")
"""What a build leaves on the wrapper, with any attribute ``build`` sets (a helper tool's name)."""


class ToolsWrapper(PerturbationWrapper):
    """Rewrites the tool set. Names the agent sees are translated back before the inner env runs a call;
    a name the wrapper does not show is unknown, even if an inner env knows it."""

    renames_text = False
    """Whether inner tool names mentioned in descriptions and messages must be rewritten to visible ones."""

    def __init__(self, env: Env, spec: Perturbation) -> None:
        super().__init__(env, spec)
        self._routes: dict[str, Route] | None = None
        self._text_map: dict[str, str] = {}
        self._text_re: re.Pattern[str] | None = None
        self._inner_ids: tuple[int, ...] = ()
        self._made: set[str] = set()

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        raise NotImplementedError

    @property
    def task_tools(self) -> bool:
        """Whether the task has a tool list of its own (bfcl's: its backends'), so draws over it are per task."""
        return self.domain.tools_for(self.task) is not self.domain.tools

    def universe(self, names: list[str]) -> list[str]:
        """What a draw over the tool set is made over: the task's whole tool list (with the tools held back for
        a later turn) where it holds every name shown, else the names shown (a stack whose lower wrapper renamed
        them). A draw over it gives each tool the same lot in every turn of an episode."""
        whole = [t.name for t in self.domain.tools_for(self.task)]
        return whole if set(names) <= set(whole) else list(names)

    def some(self, names: list[str], among: list[str], label: str) -> set[str]:
        """About half of ``names``, each by a draw of its own (``label`` names the draw), and at least one of
        ``among`` (those of :meth:`universe` that qualify): which others are shown never changes a tool's lot."""
        lot = {n: self.rng(n, label).random() for n in {*names, *among}}
        chosen = {n for n in names if lot[n] < 0.5}
        if among and not any(lot[n] < 0.5 for n in among):
            chosen.add(min(among, key=lambda n: (lot[n], n)))
        return chosen

    @property
    def routes(self) -> dict[str, Route]:
        inner = self.env.tool_specs()
        # the inner tool set can change within an episode (BFCL offers a held-back function in a
        # later turn): the routes are rebuilt for the set now offered
        if self._routes is None or self._inner_ids != tuple(map(id, inner)):
            self._inner_ids = tuple(map(id, inner))
            key = (type(self), self.spec, self.task.id if self.per_task else "", tuple(map(id, inner)))
            cached = _BUILDS.get(key)
            if cached is not None and all(a is b for a, b in zip(cached[0], inner, strict=True)):
                self.__dict__.update(cached[1])
            else:
                before = set(self.__dict__)
                self._build(inner)
                if len(_BUILDS) >= _MAX_BUILDS:
                    _BUILDS.clear()
                # a rebuild (a held-back function offered) sets again what the first build set: kept with it, or
                # a wrapper served this build from the cache would lack it (rate_limit's wait tool)
                self._made |= set(self.__dict__) - before
                made = {k: v for k, v in self.__dict__.items() if k in self._made or k in _BUILT}
                _BUILDS[key] = (inner, made)
        assert self._routes is not None  # set by _build, or from the cache through __dict__
        return self._routes

    def _build(self, inner: list[ToolSpec]) -> None:
        routes = self.build(inner)
        if self.renames_text:
            self._text_map = {r.target: name for name, r in ((r.spec["function"]["name"], r) for r in routes)
                              if r.target and r.target != name}  # fmt: skip
            if self._text_map:
                self._text_re = mentions(self._text_map)
                for r in routes:
                    r.spec = self._rename_spec_text(r.spec)
        self._routes = {r.spec["function"]["name"]: r for r in routes}

    def tool_specs(self) -> list[ToolSpec]:
        return [r.spec for r in self.routes.values()]

    def rename_text(self, text: str) -> str:
        if self._text_re is None or not text:
            return text
        return self._text_re.sub(lambda m: self._text_map[m.group(m.lastindex or 0)], text)

    def _rename_spec_text(self, spec: ToolSpec) -> ToolSpec:
        fn = spec["function"]
        spec = with_description(spec, self.rename_text(fn["description"]))
        parameters = params_of(spec)
        if self._text_re is not None and self._text_re.search("\n".join(_param_texts(parameters))):
            parameters["properties"] = clone(parameters["properties"])
            _rename_param_text(parameters, self.rename_text)
        return spec

    def call(self, name: str, arguments: Any) -> ToolResult:
        route = self.routes.get(name) if isinstance(name, str) else None
        if route is None:
            known = ", ".join(self.routes)
            return failure(str(name), "unknown_tool", f"no tool named {name!r}; tools: {known}")
        if route.handler is not None:
            result = route.handler(self, arguments)
        else:
            args = arguments
            if isinstance(arguments, dict) and (route.params is not None or route.drop):
                args, problem = self.translate(route, arguments)
                if problem:
                    return failure(name, "invalid_arguments", problem)
            result = self.env.call(route.target or name, args)
        return self.visible_result(name, route, result)

    def translate(self, route: Route, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        out = {}
        for key, value in arguments.items():
            if key in route.drop:
                continue
            if route.params is not None and key not in route.params:
                return {}, f"unexpected argument '{key}'"
            out[route.params[key] if route.params is not None else key] = value
        return out, ""

    def visible_result(self, name: str, route: Route, result: ToolResult) -> ToolResult:
        update: dict[str, Any] = {"name": name}
        if result.message:
            message = self.rename_text(result.message)
            for inner, visible in route.inner_params.items():
                message = message.replace(f"'{inner}'", f"'{visible}'")
            update["message"] = message
        return result.model_copy(update=update)


_WORD_NAME = re.compile(r"[a-z]+")


def mentions(names: Iterable[str]) -> re.Pattern[str]:
    """A pattern of where a text mentions one of ``names`` (the name is the last group that matched).

    A name shaped like an identifier (``get_weather``, ``fillFuelTank``) is a mention wherever it stands as a
    word. A name that is a plain word (bfcl's ``add``, ``sort``, ``mean``) is one only where it stands as
    code: called (``add(``) or quoted; elsewhere it is the word ("the fuel to add to the tank")."""
    names = sorted(names, key=len, reverse=True)
    words = [re.escape(n) for n in names if _WORD_NAME.fullmatch(n)]
    idents = [re.escape(n) for n in names if not _WORD_NAME.fullmatch(n)]
    parts = [r"\b(" + "|".join(idents) + r")\b"] if idents else []
    if words:
        alternation = "|".join(words)
        parts += [rf"\b({alternation})(?=\()", rf"(?<=[`'\"])({alternation})(?=[`'\"])"]
    return re.compile("|".join(parts))


def _param_texts(schema: dict[str, Any]) -> list[str]:
    texts = []
    for prop in schema.get("properties", {}).values():
        texts.append(prop.get("description", ""))
        if prop.get("type") == "object":
            texts.extend(_param_texts(prop))
    return texts


def _rename_param_text(schema: dict[str, Any], rename: Callable[[str], str]) -> None:
    for prop in schema.get("properties", {}).values():
        if "description" in prop:
            prop["description"] = rename(prop["description"])
        if prop.get("type") == "object":
            _rename_param_text(prop, rename)


def rename_params(spec: ToolSpec, mapping: dict[str, str], order: list[str] | None = None) -> ToolSpec:
    """A copy of ``spec`` with parameters renamed by ``mapping`` (inner → visible) and reordered."""
    spec = clone(spec)
    parameters = params_of(spec)
    props = parameters["properties"]
    names = order or list(props)
    parameters["properties"] = {mapping.get(k, k): props[k] for k in names}
    parameters["required"] = [mapping.get(k, k) for k in parameters.get("required", [])]
    return spec


def with_description(spec: ToolSpec, description: str, name: str | None = None) -> ToolSpec:
    """A copy of ``spec`` with a new description (and name). The parameter dict is a fresh shallow copy:
    reassign its ``properties`` or ``required`` freely, but copy a property before changing it."""
    fn = spec["function"]
    parameters = dict(fn["parameters"])
    fn = {**fn, "description": description, "parameters": parameters}
    if name is not None:
        fn["name"] = name
    return {**spec, "function": fn}


def unique_name(candidate: str, taken: set[str]) -> str:
    name, n = candidate, 2
    while name in taken:
        name, n = f"{candidate}{n}", n + 1
    taken.add(name)
    return name
