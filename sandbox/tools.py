"""Tools: pydantic-validated Python functions over a world, exported as chat-template specs.

A tool is written one of three ways: as a typed Python function (``@tool``, or
:meth:`Tool.from_function`) whose signature and docstring give the JSON schema; as an OpenAI-style
spec with a handler (:meth:`Tool.from_spec`); or, as the built-in domains do, as a :class:`Tool`
over ``(world, state, args)`` with an :class:`Args` model.

A tool failure is an observation sent back to the agent (a :class:`ToolResult` with an
``error``), never an exception out of the episode. Tool functions signal failure by raising
:class:`ToolFailure`; :meth:`Toolbox.call` turns it, and any validation problem, into a result, as it
does a result that is no plain JSON, nested deeper than :data:`MAX_RESULT_DEPTH` or longer than
:data:`MAX_RESULT_CHARS` (it could be neither shown nor stored), and a call of a tool with a ``timeout``
that gives no answer in time.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import re
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from sandbox.errors import UsageError, WrongType
from sandbox.parse import json_value
from sandbox.schema import describe_validation_error, make_spec, model_name, parse_docstring, python_type
from sandbox.state import Write

ErrorKind = Literal[
    "unknown_tool",  # the agent called a name that is not a tool
    "invalid_arguments",  # missing, extra or mistyped arguments
    "not_found",  # a well-formed call about an entity that does not exist
    "runtime_error",  # a transient failure: the same call may succeed later
    "rate_limited",  # too many calls: retry after the time given
    "moved",  # the tool answers that another tool now does its job
    "fatal",  # a permanent failure: the task cannot be completed
]
Role = Literal["lookup", "write", "wait"]
"""What a tool does, for perturbations that need to know: reads, changes the state, or lets time pass."""
ROLES: tuple[Role, ...] = Role.__args__  # type: ignore[attr-defined]  # a Literal's __args__, which typing does not declare
AGENT_ERRORS: frozenset[str] = frozenset({"unknown_tool", "invalid_arguments"})
"""Error kinds that are the agent's fault; they make up the tool error rate."""
DEFAULT_TIMEOUT = 10.0
"""Seconds a tool call may take before it fails as a hung tool: an MCP server's, and a tool the user writes."""
MAX_RESULT_DEPTH = 64
"""Nesting of a tool's result at most: a deeper one would not read back from the episode cache."""
MAX_RESULT_CHARS = 100_000
"""Characters of a tool's result at most, as the JSON the agent reads: each is kept twice in its episode."""
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""A tool name as MCP's naming guidance has it: 1 to 128 ASCII letters, digits, ``_``, ``-`` and ``.``; any
other (a control character, a newline, ``</tool_call>``, a path) would reach the prompt and the terminal."""


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolFailure(Exception):
    """Raised inside a tool function; becomes an error observation."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


_OBSERVATION = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=False)
_STRICT = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=False, allow_nan=False)
"""``json.dumps(..., separators=(", ", ": "), ensure_ascii=False)``, built once: dumps builds an encoder per call."""


class ToolResult(BaseModel):
    """What one tool call returned: ``content`` on success, ``error`` and ``message`` otherwise."""

    model_config = ConfigDict(frozen=True)

    name: str
    content: Any = None
    error: ErrorKind | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def render(self) -> str:
        """The observation text the agent reads: compact JSON."""
        body = self.content if self.ok else {"error": self.error, "message": self.message}
        return _OBSERVATION.encode(body)


@dataclass(frozen=True)
class Tool:
    """A named function over ``(world, state, args)`` with a pydantic argument model.

    ``role`` says what the tool does ("lookup", "write" or "wait"); it defaults to "write" for a tool
    that ``writes`` and "lookup" otherwise (a domain of listed tasks turns a "lookup" whose gold calls
    change the state into a "write"). ``role_known`` is False for a tool whose role nobody declared
    (one made by :meth:`from_function` or :meth:`from_spec` without ``role=``) until its domain learns it
    (:func:`sandbox.define_domain`: the gold plan's replay shows it); perturbations that blank or repeat
    answers treat such a tool as a write. ``idempotent`` says a write may be repeated without harm
    (MCP's ``idempotentHint``): the judge does not count its repeats. ``schema``, when set, is the JSON
    schema the agent is shown (a tool made from a spec keeps the spec's own).
    """

    name: str
    description: str
    args: type[Args]
    fn: Callable[[Any, Any, Any], Any]
    writes: bool = False
    role: Role = None  # type: ignore[assignment]  # resolved in __post_init__
    schema: dict[str, Any] | None = field(default=None, compare=False)
    records: bool = False
    """Whether the toolbox notes each success of this write in ``state.writes`` (tools over the domain's own
    state do; the built-in tools note their writes themselves, with a verification code)."""
    role_known: bool = True
    idempotent: bool = False
    timeout: float | None = None
    """Seconds a call may take (``None``: no deadline). A call that takes longer fails as a hung tool and is
    left running in its thread; the episode's later calls fail, since its state is no longer its own."""

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if self.timeout is not None and not (isinstance(self.timeout, int | float) and self.timeout > 0):
            raise UsageError(f"tool {self.name!r}: timeout={self.timeout!r}; give seconds above 0, or None")
        role = self.role if self.role is not None else "write" if self.writes else "lookup"
        if role not in ROLES:
            raise UsageError(f"tool {self.name!r}: role={role!r} is not known; use one of {', '.join(ROLES)}")
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "writes", self.writes or role == "write")

    @cached_property
    def spec(self) -> dict[str, Any]:
        """The tool in the format chat templates and OpenAI servers take."""
        if self.schema is not None:
            return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                     "parameters": self.schema}}  # fmt: skip
        return make_spec(self.name, self.description, self.args)

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
        role: Role | None = None, idempotent: bool = False, timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Tool:  # fmt: skip
        """A tool from a typed function ``fn(state, arg: type, ...) -> JSON-able data``; ``role`` and
        ``idempotent`` as :class:`Tool` says.

        The first parameter receives the episode's state (what the domain's state factory made for
        this episode); the others are the tool's arguments. Their types and defaults give the JSON
        schema (through pydantic), their descriptions come from ``Annotated[str, Field(description=...)]``
        or the docstring's ``Args:`` section, and the docstring's first paragraph describes the tool.
        ``fn`` may raise :class:`ToolFailure` for an error the agent should see. A call runs in a thread
        of its own and fails after ``timeout`` seconds (``None``: no deadline, in the calling thread).
        """
        tool_name = name or fn.__name__
        params = list(inspect.signature(fn).parameters.values())
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            raise WrongType(f"tool {tool_name!r}: the function must take the episode's state first: "
                            f"def {fn.__name__}(state, ...)")  # fmt: skip
        summary, documented = parse_docstring(inspect.getdoc(fn) or "")
        arg_params = params[1:]
        names = [p.name for p in arg_params]
        for pname in documented:
            if pname not in names:
                raise WrongType(f"tool {tool_name!r}: the docstring describes {pname!r}, which is no parameter "
                                f"of {fn.__name__}; its parameters: {', '.join(names) or 'none'}")  # fmt: skip
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except (NameError, TypeError) as exc:
            raise WrongType(f"tool {tool_name!r}: cannot read the parameter types of {fn.__name__} ({exc})") from None
        fields: dict[str, Any] = {}
        for p in arg_params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise WrongType(f"tool {tool_name!r}: *{p.name} cannot be a tool argument; name each argument")
            default = ... if p.default is p.empty else p.default
            info = Field(default, description=documented[p.name]) if p.name in documented else Field(default)
            fields[p.name] = (hints.get(p.name, Any), info)
        model = create_model(f"{model_name(tool_name)}Args", __base__=Args, **fields)

        def call(world: Any, state: Any, args: Args) -> Any:
            return fn(_own(state), **{k: getattr(args, k) for k in names})

        summary = description if description is not None else summary
        known, role = role is not None, role if role is not None else "lookup"  # a lookup, unless it says otherwise
        return cls(tool_name, summary, model, call, role=role, records=True, role_known=known,
                   idempotent=idempotent, timeout=timeout)  # fmt: skip

    @classmethod
    def from_spec(
        cls, spec: Mapping[str, Any], handler: Callable[..., Any], *, role: Role | None = None,
        idempotent: bool = False, timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Tool:  # fmt: skip
        """A tool from an OpenAI-style spec ``{"type": "function", "function": {name, description, parameters}}``
        and ``handler(state, **arguments)``. Arguments are checked against the spec's properties (their
        JSON types, enums and required names; an unknown argument is an error) before the handler runs."""
        function = spec.get("function", spec)
        if not isinstance(function, Mapping) or "name" not in function:
            raise UsageError(f"a tool spec needs {{'type': 'function', 'function': {{'name': ...}}}}, got {spec!r}")
        tool_name = function["name"]
        schema = dict(function.get("parameters") or {"type": "object", "properties": {}})
        required = set(schema.get("required", []))
        fields: dict[str, Any] = {}
        for pname, prop in schema.get("properties", {}).items():
            kind = python_type(prop)
            fields[pname] = (kind, Field(...)) if pname in required else (kind | None, Field(None))
        model = create_model(f"{model_name(tool_name)}Args", __base__=Args, **fields)

        def call(world: Any, state: Any, args: Args) -> Any:
            return handler(_own(state), **args.model_dump(exclude_unset=True))

        known, role = role is not None, role if role is not None else "lookup"  # a lookup, unless it says otherwise
        return cls(tool_name, function.get("description", ""), model, call, role=role, schema=schema, records=True,
                   role_known=known, idempotent=idempotent, timeout=timeout)  # fmt: skip


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None, role: Role | None = None,
         idempotent: bool = False, timeout: float | None = DEFAULT_TIMEOUT,
         ) -> Callable[[Callable[..., Any]], Tool]: ...  # fmt: skip
def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None,
         role: Role | None = None, idempotent: bool = False, timeout: float | None = DEFAULT_TIMEOUT,
         ) -> Tool | Callable[[Callable[..., Any]], Tool]:  # fmt: skip
    """``@tool`` or ``@tool(role="write", timeout=30)``: :meth:`Tool.from_function` as a decorator.

    The decorated function's first parameter is the episode's state; see :meth:`Tool.from_function`.
    """
    if fn is not None:
        return Tool.from_function(
            fn, name=name, description=description, role=role, idempotent=idempotent, timeout=timeout
        )
    return lambda f: Tool.from_function(
        f, name=name, description=description, role=role, idempotent=idempotent, timeout=timeout
    )


def check_tool_name(name: object, fix: str = "rename the tool") -> None:
    """Raise :class:`~sandbox.errors.UsageError` unless ``name`` is a tool name by :data:`TOOL_NAME`; its message
    shows the name escaped and ends with ``fix``."""
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        text = str(name)
        shown = ascii(text) if len(text) <= 80 else f"{text[:80]!a}... ({len(text):,} characters)"
        raise UsageError(
            f"tool name {shown} is outside MCP's naming guidance (1 to 128 ASCII letters, digits, '_', '-' "
            f"and '.'): it would reach the agent's prompt and the terminal as it is; {fix}"
        )


def _own(state: Any) -> Any:
    """The domain's own state object of an episode's :class:`~sandbox.state.State` (a bare object passes)."""
    return getattr(state, "data", state)


@dataclass
class Toolbox:
    """The tools of one domain, dispatched by name."""

    tools: Mapping[str, Tool]
    _specs: list[dict[str, Any]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._specs = [tool.spec for tool in self.tools.values()]

    def specs(self) -> list[dict[str, Any]]:
        return list(self._specs)

    def call(self, world: Any, state: Any, name: str, arguments: Any) -> ToolResult:
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(self.tools)
            return ToolResult(name=str(name), error="unknown_tool", message=f"no tool named {name!r}; tools: {known}")
        if not isinstance(arguments, dict):
            return ToolResult(
                name=name,
                error="invalid_arguments",
                message=f"arguments must be a JSON object, got {type(arguments).__name__}",
            )
        try:
            args = tool.args.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(name=name, error="invalid_arguments", message=describe_validation_error(exc))
        hung = getattr(state, "hung", None)
        if hung is not None:
            return ToolResult(name=name, error="fatal", message=f"the episode's tools are unusable: {hung}")
        try:
            content = tool.fn(world, state, args) if tool.timeout is None else _within(tool, world, state, args)
        except ToolFailure as failure:
            return ToolResult(name=name, error=failure.kind, message=failure.message)
        except _Hung:
            message = f"tool {name!r} gave no answer within {tool.timeout:g}s"
            if hasattr(state, "hung"):
                state.hung = f"{message} and may still change the state"
            return ToolResult(name=name, error="runtime_error", message=f"the tool hangs: {message}")
        if tool.records and tool.writes and isinstance(getattr(state, "writes", None), list):
            code = content.get("code") if isinstance(content, dict) else None
            state.writes.append(Write(name, args.model_dump(mode="json"), code if isinstance(code, str) else ""))
        elif not tool.role_known and isinstance(getattr(state, "unsure", None), list):
            state.unsure.append(name)
        return shown(name, content)


def shown(name: str, content: Any) -> ToolResult:
    """The result of a call that returned ``content``: an error the agent reads where it is no plain JSON,
    deeper than :data:`MAX_RESULT_DEPTH` or longer than :data:`MAX_RESULT_CHARS` (the tool's fault, not the
    agent's; such a result could be neither shown nor stored)."""
    try:  # the common case at C speed: JSON with fewer brackets than the depth allowed is no deeper
        text = _STRICT.encode(content)
        plain = text.count("{") + text.count("[") < MAX_RESULT_DEPTH
    except (TypeError, ValueError, RecursionError):
        plain = False
    if not plain:
        try:
            content = json_value(content, max_depth=MAX_RESULT_DEPTH)
        except ValueError as exc:
            return ToolResult(name=name, error="runtime_error", message=f"the tool's result cannot be shown: {exc}")
        text = _OBSERVATION.encode(content)
    chars = len(text)
    if chars > MAX_RESULT_CHARS:
        message = f"the tool's result is {chars:,} characters, more than the {MAX_RESULT_CHARS:,} a result may have"
        return ToolResult(name=name, error="runtime_error", message=message)
    return ToolResult(name=name, content=content)


class _Hung(Exception):
    """A call with a deadline gave no answer in time."""


def _within(tool: Tool, world: Any, state: Any, args: Args) -> Any:
    """``tool.fn(world, state, args)`` in a thread of its own, waited for ``tool.timeout`` seconds: Python
    cannot stop a thread, so one that hangs is left behind (a daemon: it does not keep the process alive)."""
    outcome: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            outcome.append((True, context.run(tool.fn, world, state, args)))
        except BaseException as exc:  # handed to the caller, as if the call had raised there
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"tool {tool.name}", daemon=True)
    thread.start()
    thread.join(tool.timeout)
    if not outcome:
        raise _Hung
    done, value = outcome[0]
    if not done:
        raise value
    return value
