"""A controlled, deterministic tool world for testing tool-use agents under open-world shifts."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.agent import Agent, FunctionAgent, Reply, Turn, as_agent
    from sandbox.agents import OracleAgent, ScriptedAgent, StaticAgent
    from sandbox.computed import Computed
    from sandbox.define import UserTask, define_domain, load_tasks
    from sandbox.domain import Domain
    from sandbox.domains import DOMAINS, get_domain, make_env, register_domain
    from sandbox.end_state import snapshot
    from sandbox.env import Env, Wrapper
    from sandbox.episode import Episode, Step, run_episode, run_episodes
    from sandbox.judge import OUTCOMES, Outcome, judge
    from sandbox.metrics import Delta, Rate, delta, pass_hat_k, refusal_rate, success_rate, tool_error_rate, wilson
    from sandbox.parse import ToolCall, parse_reply
    from sandbox.task import Call, Source, Task
    from sandbox.tools import Tool, ToolFailure, ToolResult, tool

__version__ = "0.1.0"

_HOMES: dict[str, tuple[str, ...]] = {
    "sandbox.agent": ("Agent", "FunctionAgent", "Reply", "Turn", "as_agent"),
    "sandbox.agents": ("OracleAgent", "ScriptedAgent", "StaticAgent"),
    "sandbox.computed": ("Computed",),
    "sandbox.define": ("UserTask", "define_domain", "load_tasks"),
    "sandbox.domain": ("Domain",),
    "sandbox.domains": ("DOMAINS", "get_domain", "make_env", "register_domain"),
    "sandbox.end_state": ("snapshot",),
    "sandbox.env": ("Env", "Wrapper"),
    "sandbox.episode": ("Episode", "Step", "run_episode", "run_episodes"),
    "sandbox.judge": ("OUTCOMES", "Outcome", "judge"),
    "sandbox.metrics": ("Delta", "Rate", "delta", "pass_hat_k", "refusal_rate", "success_rate", "tool_error_rate",
                        "wilson"),
    "sandbox.parse": ("ToolCall", "parse_reply"),
    "sandbox.task": ("Call", "Source", "Task"),
    "sandbox.tools": ("Tool", "ToolFailure", "ToolResult", "tool"),
}  # fmt: skip
_HOME = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives: imported when first read (PEP 562), so ``import sandbox`` loads none of it."""


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        try:  # a submodule not imported yet (``sandbox.perturbations`` after a bare ``import sandbox``)
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


class _Package(types.ModuleType):
    """``sandbox`` itself: a submodule imported later does not hide the public name it shares
    (``sandbox.judge`` stays the function, as when the names were imported eagerly)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOME and isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def tasks(
    domain: str | Domain = "poi", split: str = "test", n: int | None = None, seed: int = 0,
    families: Sequence[str] | None = None,
) -> list[Task]:  # fmt: skip
    """``n`` tasks of a domain's split (all of them, up to the split's default size, if ``None``), deterministic
    in ``seed``, of the task ``families`` named (all if ``None``). ``domain`` is a name, ``module:attribute`` or
    a Domain (see :func:`get_domain`)."""
    from sandbox.domains import get_domain

    return get_domain(domain).tasks(split, n, seed, families)  # type: ignore[arg-type]  # a str split: Domain.tasks checks it, one clear error


__all__ = [
    "DOMAINS", "OUTCOMES", "Agent", "Call", "Computed", "Delta", "Domain", "Env", "Episode", "FunctionAgent",
    "OracleAgent", "Outcome", "Rate", "Reply", "ScriptedAgent", "Source", "StaticAgent", "Step", "Task", "Tool",
    "ToolCall",
    "ToolFailure", "ToolResult", "Turn", "UserTask", "Wrapper",
    "as_agent", "define_domain", "delta", "get_domain", "judge", "load_tasks", "make_env", "parse_reply",
    "pass_hat_k", "refusal_rate", "register_domain", "run_episode", "run_episodes", "snapshot", "success_rate",
    "tasks", "tool", "tool_error_rate", "wilson",
]  # fmt: skip
