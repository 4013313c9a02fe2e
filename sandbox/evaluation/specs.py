"""Agents by spec: ``oracle``, ``static``, ``module:callable``, ``openai:MODEL@URL`` and ``hf:PATH``.

``load_agent`` turns a spec into an object with ``act(turns)``. Nothing heavy is imported until
a spec asks for it: ``hf:`` imports ``training`` (and so torch) only when used.
"""

from __future__ import annotations

import difflib
import importlib
import os
from typing import Any

from sandbox.agent import Agent, FunctionAgent
from sandbox.errors import MissingExtra, UsageError, install_line, require_extra
from sandbox.importing import import_attribute

BUILTIN = ("oracle", "static")
SPEC_HELP = "oracle, static, module:callable, openai:MODEL@URL or hf:PATH"


class AgentSpecError(UsageError):
    """A spec that names no agent; the message says what was given and what is allowed."""


def check_spec(spec: str) -> str:
    """The spec, stripped, if its form is valid; raises :class:`AgentSpecError` otherwise (imports nothing)."""
    spec = spec.strip()
    if spec in BUILTIN:
        return spec
    if spec.startswith("openai:"):
        model = spec[len("openai:") :].partition("@")[0]
        if not model:
            raise AgentSpecError(
                f"agent {spec!r} names no model. Use openai:MODEL@URL, e.g. openai:qwen2.5@http://localhost:8000/v1"
            )
        return spec
    if spec.startswith("hf:"):
        if not spec[3:]:
            raise AgentSpecError(
                f"agent {spec!r} names no checkpoint. Use hf:PATH (a save_pretrained directory) or hf:default"
            )
        return spec
    module, sep, attr = spec.partition(":")
    if sep and module and attr and all(part.isidentifier() for part in [*module.split("."), *attr.split(".")]):
        return spec
    close = difflib.get_close_matches(spec, BUILTIN, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise AgentSpecError(f"Unknown agent {spec!r}.{hint} Use {SPEC_HELP}.")


TRAIN_MODULES = ("torch", "transformers")
"""What an ``hf:`` agent cannot load without (the ``train`` extra)."""


def check_agent(spec: str) -> str:
    """The spec, if it can name an agent here: its form (:func:`check_spec`), its ``module:callable``
    importable, the ``train`` extra installed for ``hf:``. Nothing is built, no model loaded, no server
    called; raises :class:`AgentSpecError`."""
    spec = check_spec(spec)
    if spec.startswith("hf:"):
        _require_train(f"agent {spec!r}")
    elif ":" in spec and not spec.startswith("openai:"):
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
    if spec.startswith("openai:"):
        from sandbox.agents.openai import DEFAULT_OPENAI_URL, OpenAIAgent

        model, _, url = spec[len("openai:") :].partition("@")
        return OpenAIAgent(model, url or os.environ.get("OPENAI_BASE_URL", DEFAULT_OPENAI_URL))
    if spec.startswith("hf:"):
        return _hf(spec[3:])
    return _callable(spec)


def _static() -> Agent:
    try:
        from sandbox.agents.static import StaticAgent
    except ImportError as exc:
        raise AgentSpecError(f"agent 'static' needs sandbox.agents.static.StaticAgent: {exc}") from exc
    return StaticAgent()


HF_LOADER = "training.inference.model_agent:load_agent"
"""Where ``hf:`` agents come from. Named, not imported: the training package sits above the core
(DESIGN.md's layers) and needs torch, so it is loaded only when a spec asks for a checkpoint."""


def _hf(path: str) -> Agent:
    what = f"agent 'hf:{path}'"
    _require_train(what)
    module, _, name = HF_LOADER.partition(":")
    try:
        loader = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise AgentSpecError(f"{what} needs the `train` extra ({exc}); install it: {install_line('train')}") from exc
    try:
        return loader(path)
    except ModuleNotFoundError as exc:
        raise AgentSpecError(
            f"{what} needs the `train` extra ({exc.name} not installed); install it: {install_line('train')}"
        ) from exc


def _require_train(what: str) -> None:
    try:
        require_extra("train", TRAIN_MODULES, what)
    except MissingExtra as exc:
        raise AgentSpecError(str(exc)) from None


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
