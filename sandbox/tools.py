"""Tools: pydantic-validated Python functions over a world, exported as chat-template specs.

A tool failure is an observation sent back to the agent (a :class:`ToolResult` with an
``error``), never an exception out of the episode. Tool functions signal failure by raising
:class:`ToolFailure`; :meth:`Toolbox.call` turns it, and any validation problem, into a result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

ErrorKind = Literal[
    "unknown_tool",  # the agent called a name that is not a tool
    "invalid_arguments",  # missing, extra or mistyped arguments
    "not_found",  # a well-formed call about an entity that does not exist
    "runtime_error",  # a transient failure: the same call may succeed later
    "rate_limited",  # too many calls: retry after the time given
    "moved",  # the tool answers that another tool now does its job
    "fatal",  # a permanent failure: the task cannot be completed
]
AGENT_ERRORS: frozenset[str] = frozenset({"unknown_tool", "invalid_arguments"})
"""Error kinds that are the agent's fault; they make up the tool error rate."""


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
    """A named function over ``(world, state, args)`` with a pydantic argument model."""

    name: str
    description: str
    args: type[Args]
    fn: Callable[[Any, Any, Any], Any]
    writes: bool = False

    @cached_property
    def spec(self) -> dict[str, Any]:
        """The tool in the format chat templates and OpenAI servers take."""
        return make_spec(self.name, self.description, self.args)


def make_spec(name: str, description: str, args: type[BaseModel]) -> dict[str, Any]:
    schema = args.model_json_schema()
    properties = {}
    for pname, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k not in ("title", "default")}
        properties[pname] = prop
    parameters = {"type": "object", "properties": properties, "required": schema.get("required", [])}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument '{where}'")
        elif err["type"] == "missing":
            parts.append(f"missing argument '{where}'")
        else:
            parts.append(f"'{where}': {err['msg']}")
    return "; ".join(parts)


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
        try:
            content = tool.fn(world, state, args)
        except ToolFailure as failure:
            return ToolResult(name=name, error=failure.kind, message=failure.message)
        return ToolResult(name=name, content=content)
