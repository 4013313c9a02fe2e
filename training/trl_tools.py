"""A case's perturbed tools as the methods of an environment class, the way TRL's ``environment_factory`` reads
tools: each method's name, signature and Google docstring say its schema (``transformers.get_json_schema``).

The class is built from the case's tool specs and checked by turning it back into specs: where the rebuilt
schema is not the case's (a nested object, a union, a parameter name Python cannot spell), or the case's tools
change mid-episode (drift), or its task has several user turns, it is refused, and the rollout function
(:class:`training.trl_env.SandboxRollouts`) is the way to train on it. Validation keywords (:data:`UNSAID`: a
pattern, bounds) are left out of what the model reads, as a signature cannot say them; the tool still checks them.
"""

from __future__ import annotations

import inspect
import keyword
from typing import TYPE_CHECKING, Any, Literal

from sandbox.errors import UsageError
from sandbox.proxy.case_session import CaseSession

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.trajectory import Episode

_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}
UNSAID = frozenset(("pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                    "minItems", "maxItems", "format", "default", "examples"))  # fmt: skip
"""Validation keywords a signature cannot say: the model reads the schema without them (the tool still checks)."""
RESERVED = frozenset({"reset", "get_reward"})
"""Method names TRL reads as the environment's own, never as tools."""


class NotExpressible(UsageError):
    """A case ``environment_factory`` cannot carry; the message says why and points to the rollout function."""


def _refuse(case: Case, why: str) -> NotExpressible:
    return NotExpressible(
        f"case {case.describe()}: {why}; environment_factory cannot carry it, train on it with rollout_func "
        "(training.trl_env.SandboxRollouts, mode='rollout')"
    )


def _hint(schema: dict[str, Any]) -> Any:
    if "enum" in schema and all(isinstance(v, str | int | float | bool) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return list if not items else list[_hint(items)]  # type: ignore[misc]  # a list type built at runtime from the schema
    if isinstance(kind, str) and kind in _TYPES:
        return _TYPES[kind]
    raise ValueError(f"a parameter of schema {schema} (only strings, numbers, booleans, enums, lists and objects)")


def tool_method(spec: dict[str, Any]) -> Any:
    """The method for one tool spec: its call goes to the environment's session under the spec's name."""
    function = spec.get("function", spec)
    name = function["name"]
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())

    def call(self: Any, **arguments: Any) -> str:
        return self._session.call(name, {k: v for k, v in arguments.items() if v is not None or k in required})

    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [function.get("description") or name, "", "Args:"]
    for param, schema in properties.items():
        if not param.isidentifier() or keyword.iskeyword(param):
            raise ValueError(f"the parameter name {param!r}, which Python cannot spell")
        hint = _hint(schema)
        default = inspect.Parameter.empty if param in required else None
        annotations[param] = hint if param in required else hint | None
        signature.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, default=default,
                                           annotation=annotations[param]))  # fmt: skip
        lines.append(f"    {param}: {schema.get('description') or param}")
    if not properties:
        lines = lines[:1]
    call.__name__ = call.__qualname__ = name
    call.__doc__ = "\n".join(lines)
    call.__annotations__ = annotations
    call.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]  # functions take __signature__, which Callable does not declare
    return call


def _same(spec: dict[str, Any], rebuilt: dict[str, Any]) -> bool:
    """Whether the schema the model will read (rebuilt from the method) says what the case's spec says."""
    a, b = spec.get("function", spec), rebuilt["function"]
    if a["name"] != b["name"] or (a.get("description") or a["name"]) != b["description"]:
        return False
    pa, pb = a.get("parameters") or {}, b["parameters"]
    if set(pa.get("required") or ()) != set(pb.get("required") or ()):
        return False
    props_a, props_b = pa.get("properties") or {}, pb.get("properties") or {}
    if set(props_a) != set(props_b):
        return False
    for key, schema in props_a.items():
        mine = {k: v for k, v in props_b[key].items() if k != "nullable"}
        theirs = {k: v for k, v in schema.items() if k not in UNSAID}
        theirs["description"] = schema.get("description") or key
        if mine != theirs:
            return False
    return True


def environment_class(case: Case, max_steps: int | None = None) -> type:
    """The environment class of ``case`` (see the module's docstring); :class:`NotExpressible` where it cannot be."""
    from transformers.utils import get_json_schema

    from sandbox.budget import user_turns

    probe = CaseSession(case)
    if probe.done:
        raise _refuse(case, f"it does not start ({probe.episode.steps[-1].error if probe.episode else ''})")
    if any(p.after for p in case.perturbations):
        raise _refuse(case, "its tool list changes mid-episode (drift)")
    turns = user_turns(case.task)
    if turns is not None and len(set(turns)) > 1:
        raise _refuse(case, "its task has several user turns")
    methods: dict[str, Any] = {}
    for spec in probe.tools:
        name = spec["function"]["name"]
        if name in RESERVED or name.startswith("_") or not name.isidentifier():
            raise _refuse(case, f"its tool name {name!r} is not a method name TRL offers as a tool")
        try:
            method = tool_method(spec)
        except ValueError as exc:
            raise _refuse(case, str(exc)) from None
        if not _same(spec, get_json_schema(method)):
            raise _refuse(case, f"the schema of {name} is not one a signature and docstring say exactly")
        methods[name] = method

    def reset(self: Any, **_: Any) -> None:
        self._session = CaseSession(case, max_steps)

    namespace = {"reset": reset, "__doc__": f"The perturbed tools of {case.describe()}.", **methods}
    return type("SandboxCase", (), namespace)


def finish(environment: Any, text: str) -> Episode:
    """End an environment's episode with the model's final ``text`` (where the step limit has not ended it) and
    return it judged."""
    session: CaseSession = environment._session
    if session.episode is None and session.answer(text) is None:
        raise _refuse(session.case, "its task has several user turns")
    assert session.episode is not None
    return session.episode


def with_response_template(tokenizer: Any) -> Any:
    """``tokenizer`` able to parse its own tool calls in TRL: the Hermes-style ``<tool_call>`` blocks of the
    project's chat template, read with TRL's Qwen3 response template where the tokenizer names none."""
    if tokenizer is None or getattr(tokenizer, "response_template", None) is not None:
        return tokenizer
    from trl.chat_template_utils import qwen3_template

    tokenizer.response_template = qwen3_template
    return tokenizer


__all__ = ["NotExpressible", "environment_class", "finish", "tool_method", "with_response_template"]
