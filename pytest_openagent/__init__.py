"""pytest-openagent: test how robust a tool-use LLM agent is to open-world shifts.

import pytest_openagent as openagent

@openagent.perturb(tier="reasoning")
def test_agent_follows_inverted_dependencies(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""

from pytest_openagent import strategies
from pytest_openagent.decorator import perturb
from sandbox.agents.openai import OpenAIAgent
from sandbox.case import Case
from sandbox.define import UserTask, define_domain
from sandbox.domains import register_domain
from sandbox.evaluation import AgentFailure, GateError, GateResult, Record, Report, check, compare, evaluate, load_agent
from sandbox.tools import ToolFailure, tool

__version__ = "0.1.0"

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
