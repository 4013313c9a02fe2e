"""One case's episode driven from outside, call by call: what a trainer's environment or an environment server plays.

A :class:`CaseSession` starts the case's perturbed env and keeps the episode in progress (the same
:class:`~sandbox.live_episode.LiveEpisode` the runner keeps): each :meth:`~CaseSession.call` is one of the
agent's turns (its perturbations count calls, a drift starts after the K-th, the step limit counts them) and
:meth:`~CaseSession.answer` is its final text, which the judge reads. Nothing the session shows holds the
task's gold: the opening messages, the tools as perturbed and each call's observation.

:func:`check_train_case` is the guard every training path goes through: a case of the test or dev split,
or with a perturbation drawn from the eval pool, is refused.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from sandbox.agent import Message, Reply, ToolSpec
from sandbox.case import Case
from sandbox.errors import UsageError
from sandbox.live_episode import LiveEpisode, advance, error_text, fail
from sandbox.trajectory import Episode

_ids = itertools.count()


class EpisodeOver(UsageError):
    """A move in a session whose episode has ended; the message says how it ended."""


class CaseSession:
    """The episode of ``case``, started at once; ``max_steps`` caps its turns (the case's own budget by default)."""

    def __init__(self, case: Case, max_steps: int | None = None) -> None:
        self.case = case
        self.max_steps = min(max_steps, case.max_steps) if max_steps else case.max_steps
        self.episode: Episode | None = None
        self.revision = 0
        """How many times the tool list changed (drift): an MCP server announces ``tools/list_changed`` then."""
        self.calls = 0
        env = case.env()
        episode_id = f"session{next(_ids)}"
        try:
            self._live = LiveEpisode(env, episode_id, env.reset(), env.tool_specs(), onsets=env.onsets())
        except Exception as exc:  # a perturbation or the domain's world failed on this task
            self._live = LiveEpisode(env, episode_id, [], [])
            self.episode = fail(self._live, f"the sandbox failed to start this case: {error_text(exc)}")

    @property
    def messages(self) -> list[Message]:
        """The conversation so far, as the agent sees it (system prompt, the request, calls and observations)."""
        return list(self._live.messages)

    @property
    def opening(self) -> list[Message]:
        """The system prompt and the request (perturbed where the case perturbs it): what an agent starts from."""
        return list(self._live.messages[:2])

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools the agent is offered now (renamed, re-described, drifted: the case's perturbed surface)."""
        return list(self._live.tools)

    @property
    def done(self) -> bool:
        return self.episode is not None

    def call(self, name: str, arguments: Any) -> str:
        """Call a tool as the agent's next turn; the observation it reads (an error observation where the call
        fails, as the episode records it). Raises :class:`EpisodeOver` once the episode has ended."""
        self._check_live("call a tool")
        self.calls += 1
        before = len(self._live.messages)
        tools = self._live.tools
        ended = advance(self._live, Reply(text="", tool_calls=[{"function": {"name": name, "arguments": arguments}}]),
                        self.max_steps)  # fmt: skip
        if self._live.tools != tools:
            self.revision += 1
        new = self._live.messages[before:]
        observation = next((str(m["content"]) for m in new if m["role"] == "tool"), None)
        if ended is not None:
            self.episode = ended
            if observation is None:  # the call could not be read: its step holds why
                observation = json.dumps({"error": "invalid_call", "message": ended.steps[-1].error or ended.ending})
        notices = [str(m["content"]) for m in new if m["role"] == "system"]
        return "\n".join([observation or "", *notices]).strip()

    def answer(self, text: str) -> Episode | None:
        """The agent's final text for the current user turn: the judged episode, or ``None`` where the task has
        another user turn (its message is then the last of :attr:`messages`)."""
        self._check_live("answer")
        ended = advance(self._live, Reply(text=text if isinstance(text, str) else str(text)), self.max_steps)
        if ended is not None:
            self.episode = ended
        return ended

    def _check_live(self, what: str) -> None:
        if self.episode is not None:
            raise EpisodeOver(
                f"cannot {what}: the episode has ended ({self.episode.ending}, outcome {self.episode.outcome}); "
                "reset to start another"
            )


def check_train_case(case: Case) -> Case:
    """``case`` if it may be trained on: a task of the train split, every perturbation from the train pool."""
    if case.task.split != "train":
        raise UsageError(
            f"case {case.describe()}: its task is of the {case.task.split} split; train only on the train split "
            "(the others measure what training did)"
        )
    evals = [p.name for p in case.perturbations if p.pool != "train"]
    if evals:
        raise UsageError(
            f"case {case.describe()}: {', '.join(evals)} not drawn from the train pool; training draws"
            " perturbations from the train pool only (pool='train'), so the gate's texts stay unseen"
        )
    return case


def check_train_cases(cases: Sequence[Case]) -> list[Case]:
    if not cases:
        raise UsageError("no cases to train on: give at least one train-split case")
    return [check_train_case(c) for c in cases]


__all__ = ["CaseSession", "EpisodeOver", "check_train_case", "check_train_cases"]
