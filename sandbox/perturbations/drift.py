"""Drift: a perturbation that starts after turn k of an episode instead of before the first.

:class:`Onset` holds two envs over the same base: the env as it was (``before``) and the env with the
perturbation (``env``). Until the episode has played ``after`` turns it serves ``before``; from then on
``env``. The episode loop counts the turns (``State.turn``) and, when an onset passes, reads the tool list
again and tells the agent with :func:`sandbox.prompt.tools_changed`, as an MCP server tells its client with
``notifications/tools/list_changed`` (the proxy sends that notification for real).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sandbox.agent import ToolSpec
from sandbox.env import Env, Wrapper
from sandbox.tools import ToolResult

if TYPE_CHECKING:
    from sandbox.judge import Ending, Outcome
    from sandbox.trajectory import Episode


class Onset(Wrapper):
    """Serves ``before`` for the first ``after`` turns of an episode and ``changed`` (a perturbation's wrappers
    around ``before``) from then on."""

    def __init__(self, before: Env, changed: Env, after: int) -> None:
        super().__init__(changed)
        self.before = before
        self.after = after
        self.label = f"onset {after}"

    @property
    def started(self) -> bool:
        return self.state.turn >= self.after

    @property
    def now(self) -> Env:
        """The env the agent meets at this turn."""
        return self.env if self.started else self.before

    @property
    def solvable(self) -> bool:
        # a case whose drift never came (the agent answered first) is the case before it
        return self.now.solvable

    def onsets(self) -> frozenset[int]:
        return self.env.onsets() | {self.after}

    def query(self) -> str:
        return self.now.query()

    def tool_specs(self) -> list[ToolSpec]:
        return self.now.tool_specs()

    def call(self, name: str, arguments: Any) -> ToolResult:
        return self.now.call(name, arguments)

    def observe(self, result: ToolResult) -> str:
        return self.now.observe(result)

    def end_state_ok(self) -> bool | None:
        return self.now.end_state_ok()

    def review(self, episode: Episode) -> Episode:
        return self.now.review(episode)

    def next_user_message(self) -> str | None:
        return self.now.next_user_message()

    def verdict(self, ending: Ending) -> tuple[Outcome, str] | None:
        return self.now.verdict(ending)

    def describe(self) -> str:
        return self.env.describe()  # the perturbation's label carries its onset
