"""Scripted agents for tests: fixed replies turn by turn, or the replay of a recorded episode."""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.agent import Reply, Turn
from sandbox.episode import Episode
from sandbox.errors import UsageError


class ScriptedAgent:
    """Gives ``replies[n]`` on the n-th turn of every episode (0-based), then repeats the last one."""

    def __init__(self, replies: Sequence[Reply | str], name: str = "scripted") -> None:
        if not replies:
            raise UsageError("ScriptedAgent needs at least one reply")
        self.replies = list(replies)
        self.name = name
        self.calls = 0

    def fingerprint(self) -> str:
        return f"scripted:{self.name}"

    def act(self, turns: Sequence[Turn]) -> list[Reply | str]:
        self.calls += 1
        out = []
        for turn in turns:
            n = sum(m["role"] == "assistant" for m in turn.messages)
            out.append(self.replies[min(n, len(self.replies) - 1)])
        return out

    @classmethod
    def replay(cls, episode: Episode) -> ScriptedAgent:
        """An agent that says again what the agent of ``episode`` said."""
        replies: list[Reply | str] = []
        for step in episode.steps:
            if step.calls:
                calls = [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}} for c in step.calls]
                replies.append(Reply(tool_calls=calls))
            else:
                replies.append(step.reply)
        return cls(replies or [""], name=f"replay:{episode.task.id}")
