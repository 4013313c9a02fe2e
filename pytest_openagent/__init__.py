"""pytest-openagent: test how robust a tool-use LLM agent is to open-world shifts.

import pytest_openagent as openagent

@openagent.perturb(tier="reasoning")
def test_agent_follows_inverted_dependencies(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_openagent import strategies
    from pytest_openagent.decorator import perturb
    from sandbox.agents.openai import OpenAIAgent
    from sandbox.case import Case
    from sandbox.define import UserTask, define_domain
    from sandbox.domains import register_domain
    from sandbox.evaluation import (
        AgentFailure,
        GateError,
        GateResult,
        Record,
        Report,
        check,
        compare,
        evaluate,
        load_agent,
    )  # fmt: skip
    from sandbox.tools import ToolFailure, tool

__version__ = "0.1.0"

_HOMES = {
    "AgentFailure": "sandbox.evaluation", "Case": "sandbox.case", "GateError": "sandbox.evaluation",
    "GateResult": "sandbox.evaluation", "OpenAIAgent": "sandbox.agents.openai", "Record": "sandbox.evaluation",
    "Report": "sandbox.evaluation", "ToolFailure": "sandbox.tools", "UserTask": "sandbox.define",
    "check": "sandbox.evaluation", "compare": "sandbox.evaluation", "define_domain": "sandbox.define",
    "evaluate": "sandbox.evaluation", "load_agent": "sandbox.evaluation", "perturb": "pytest_openagent.decorator",
    "register_domain": "sandbox.domains", "tool": "sandbox.tools",
}  # fmt: skip
"""Where each name lives. Imported on first use (PEP 562), so that the plugin, which pytest loads in every
run of a project that has the package installed, costs nothing until a test uses it."""

__all__ = [
    "AgentFailure",
    "Case",
    "GateError",
    "GateResult",
    "OpenAIAgent",
    "Record",
    "Report",
    "ToolFailure",
    "UserTask",
    "check",
    "compare",
    "define_domain",
    "evaluate",
    "load_agent",
    "perturb",
    "register_domain",
    "strategies",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name == "strategies":
        value: Any = importlib.import_module("pytest_openagent.strategies")
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'pytest_openagent' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
