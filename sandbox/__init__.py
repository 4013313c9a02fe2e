"""A controlled, deterministic tool world for testing tool-use agents under open-world shifts."""

from collections.abc import Sequence

import sandbox.perturbations  # noqa: F401  (registers the built-in catalogue)
from sandbox.agent import Agent, FunctionAgent, Reply, Turn, as_agent
from sandbox.agents import OracleAgent, ScriptedAgent, StaticAgent
from sandbox.computed import Computed
from sandbox.define import UserTask, define_domain, load_tasks
from sandbox.domain import Domain
from sandbox.domains import DOMAINS, EAGER, get_domain, make_env, register_domain
from sandbox.end_state import snapshot
from sandbox.env import Env, Wrapper
from sandbox.episode import Episode, Step, run_episode, run_episodes
from sandbox.judge import OUTCOMES, Outcome, judge
from sandbox.metrics import Delta, Rate, delta, pass_hat_k, refusal_rate, success_rate, tool_error_rate, wilson
from sandbox.parse import ToolCall, parse_reply
from sandbox.task import Call, Source, Task
from sandbox.tools import Tool, ToolFailure, ToolResult, tool

__version__ = "0.1.0"

for _name in EAGER:
    get_domain(_name)
del _name


def tasks(
    domain: str | Domain = "poi", split: str = "test", n: int | None = None, seed: int = 0,
    families: Sequence[str] | None = None,
) -> list[Task]:  # fmt: skip
    """``n`` tasks of a domain's split (all of them, up to the split's default size, if ``None``), deterministic
    in ``seed``, of the task ``families`` named (all if ``None``). ``domain`` is a name, ``module:attribute`` or
    a Domain (see :func:`get_domain`)."""
    return get_domain(domain).tasks(split, n, seed, families)  # type: ignore[arg-type]


__all__ = [
    "DOMAINS", "OUTCOMES", "Agent", "Call", "Computed", "Delta", "Domain", "Env", "Episode", "FunctionAgent",
    "OracleAgent", "Outcome", "Rate", "Reply", "ScriptedAgent", "Source", "StaticAgent", "Step", "Task", "Tool",
    "ToolCall",
    "ToolFailure", "ToolResult", "Turn", "UserTask", "Wrapper",
    "as_agent", "define_domain", "delta", "get_domain", "judge", "load_tasks", "make_env", "parse_reply",
    "pass_hat_k", "refusal_rate", "register_domain", "run_episode", "run_episodes", "snapshot", "success_rate",
    "tasks", "tool", "tool_error_rate", "wilson",
]  # fmt: skip
