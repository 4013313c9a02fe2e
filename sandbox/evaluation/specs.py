"""Agents by spec: ``oracle``, ``static``, ``module:callable``, and ``PREFIX:REST`` for a registered prefix
(``openai:MODEL@URL`` here, ``hf:PATH`` from the ``training`` package).

``load_agent`` turns a spec into an object with ``act(turns)``. A prefix is an :class:`AgentKind` in the
registry :data:`KINDS`, or one that an installed package publishes under the ``openagent.agents`` entry-point
group (read only when a prefix is not found)::

    [project.entry-points."openagent.agents"]
    hf = "training.agent_kind:HF"

So the core names no package above it: ``hf:`` comes from ``training``'s entry point, and nothing heavy is
imported until a spec asks for it.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, Protocol

from sandbox.agent import Agent, FunctionAgent
from sandbox.errors import UsageError
from sandbox.importing import import_attribute

ENTRY_POINTS = "openagent.agents"
BUILTIN = ("oracle", "static")
SPEC_HELP = "oracle, static, module:callable, openai:MODEL@URL or hf:PATH"


class AgentSpecError(UsageError):
    """A spec that names no agent; the message says what was given and what is allowed."""


class AgentKind(Protocol):
    """The agents of one prefix (``PREFIX:REST``)."""

    usage: str
    """How to write the spec, for the error when nothing follows the prefix: ``names no model. Use ...``."""

    def check(self, spec: str, rest: str) -> None:
        """Raise :class:`AgentSpecError` if ``rest`` cannot name an agent here (its form, its extra installed);
        builds nothing, loads no model, calls no server."""

    def load(self, spec: str, rest: str) -> Agent:
        """The agent ``rest`` names."""


class OpenAIKind:
    """``openai:MODEL@URL``: a model behind an OpenAI-compatible server (``OPENAI_BASE_URL`` without ``@URL``)."""

    usage = "names no model. Use openai:MODEL@URL, e.g. openai:qwen2.5@http://localhost:8000/v1"

    def check(self, spec: str, rest: str) -> None:
        if not rest.partition("@")[0]:
            raise AgentSpecError(f"agent {spec!r} {self.usage}")

    def load(self, spec: str, rest: str) -> Agent:
        from sandbox.agents.openai import DEFAULT_OPENAI_URL, OpenAIAgent

        model, _, url = rest.partition("@")
        return OpenAIAgent(model, url or os.environ.get("OPENAI_BASE_URL", DEFAULT_OPENAI_URL))


KINDS: dict[str, AgentKind] = {"openai": OpenAIKind()}
"""Agent prefixes registered so far; entry points join on first use."""


def register_agent_kind(prefix: str, kind: AgentKind) -> None:
    """Make ``PREFIX:REST`` specs name agents of ``kind``."""
    if not prefix.isidentifier():
        raise UsageError(f"an agent prefix is an identifier such as 'hf', got {prefix!r}")
    KINDS[prefix] = kind


def _kind(prefix: str) -> AgentKind | None:
    if prefix not in KINDS:
        from importlib.metadata import entry_points

        for entry in entry_points(group=ENTRY_POINTS, name=prefix):
            KINDS[prefix] = entry.load()
    return KINDS.get(prefix)


def check_spec(spec: str) -> str:
    """The spec, stripped, if its form is valid; raises :class:`AgentSpecError` otherwise (loads no agent)."""
    spec = spec.strip()
    if spec in BUILTIN:
        return spec
    prefix, sep, rest = spec.partition(":")
    kind = _kind(prefix) if sep else None
    if kind is not None:
        if not rest.partition("@")[0]:
            raise AgentSpecError(f"agent {spec!r} {kind.usage}")
        return spec
    module, attr = prefix, rest
    if sep and module and attr and all(part.isidentifier() for part in [*module.split("."), *attr.split(".")]):
        return spec
    close = difflib.get_close_matches(spec, BUILTIN, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise AgentSpecError(f"Unknown agent {spec!r}.{hint} Use {SPEC_HELP}.")


def check_agent(spec: str) -> str:
    """The spec, if it can name an agent here: its form (:func:`check_spec`), its ``module:callable``
    importable, its prefix's own check (the ``train`` extra installed for ``hf:``). Nothing is built, no model
    loaded, no server called; raises :class:`AgentSpecError`."""
    spec = check_spec(spec)
    prefix, sep, rest = spec.partition(":")
    kind = _kind(prefix) if sep else None
    if kind is not None:
        kind.check(spec, rest)
    elif sep:
        _attribute(spec)
    return spec


def load_agent(spec: str) -> Agent:
    """The agent a spec names."""
    spec = check_spec(spec)
    if spec == "oracle":
        from sandbox.agents import OracleAgent

        return OracleAgent()
    if spec == "static":
        return _static()
    prefix, _, rest = spec.partition(":")
    kind = _kind(prefix)
    if kind is not None:
        kind.check(spec, rest)
        return kind.load(spec, rest)
    return _callable(spec)


def _static() -> Agent:
    try:
        from sandbox.agents.static import StaticAgent
    except ImportError as exc:
        raise AgentSpecError(f"agent 'static' needs sandbox.agents.static.StaticAgent: {exc}") from exc
    return StaticAgent()


def _attribute(spec: str) -> Any:
    try:
        return import_attribute(spec, f"agent {spec!r}")
    except UsageError as exc:
        raise AgentSpecError(str(exc)) from exc.__cause__


def _callable(spec: str) -> Agent:
    """``module:callable``: a class (instantiated with no arguments), an object with ``act`` or a function.

    Its cache key (``sandbox.fingerprint``) covers the source of the module it comes from and, for an
    object, its public attributes, so editing the module reruns its episodes.
    """
    attr = spec.partition(":")[2]
    obj: Any = _attribute(spec)
    if isinstance(obj, type):
        obj = obj()
    if callable(getattr(obj, "act", None)):
        return obj
    if callable(obj):
        # Keyed by its module's source too: helpers and prompts in that module decide its replies.
        return FunctionAgent(obj, name=attr, module_source=True)
    raise AgentSpecError(
        f"agent {spec!r} is a {type(obj).__name__}; expected an object with act(turns), a class making one, "
        f"or a function fn(messages, tools) -> str"
    )
