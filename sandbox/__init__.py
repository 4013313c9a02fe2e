"""A controlled, deterministic tool world for testing tool-use agents under open-world shifts."""

import sandbox.perturbations  # noqa: F401  (registers the built-in catalogue)
from sandbox.agent import Agent, FunctionAgent, Reply, Turn, as_agent
from sandbox.agents import OracleAgent, ScriptedAgent, StaticAgent
from sandbox.domain import Domain
from sandbox.domains import DOMAINS, get_domain
from sandbox.env import Env, Wrapper, make_env
from sandbox.episode import Episode, Step, run_episode, run_episodes
from sandbox.judge import OUTCOMES, Outcome, judge
from sandbox.metrics import Delta, Rate, delta, pass_hat_k, refusal_rate, success_rate, tool_error_rate, wilson
from sandbox.parse import ToolCall, parse_reply
from sandbox.task import Call, Task
from sandbox.tools import ToolResult

__version__ = "0.1.0"


def tasks(domain: str = "poi", split: str = "test", n: int | None = None, seed: int = 0) -> list[Task]:
    """``n`` tasks of a domain's split (the split's default size if ``None``), deterministic in ``seed``."""
    return get_domain(domain).tasks(split, n, seed)  # type: ignore[arg-type]


__all__ = [
    "DOMAINS", "OUTCOMES", "Agent", "Call", "Delta", "Domain", "Env", "Episode", "FunctionAgent", "OracleAgent",
    "Outcome", "Rate", "Reply", "ScriptedAgent", "StaticAgent", "Step", "Task", "ToolCall", "ToolResult", "Turn",
    "Wrapper",
    "as_agent", "delta", "get_domain", "judge", "make_env", "parse_reply", "pass_hat_k", "refusal_rate",
    "run_episode", "run_episodes", "success_rate", "tasks", "tool_error_rate", "wilson",
]  # fmt: skip
