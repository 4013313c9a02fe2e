"""A reference agent that replays each turn's gold calls: the upper bound of the ``bfcl`` domain."""

from __future__ import annotations

from collections.abc import Sequence

from sandbox.agent import Briefed, Reply, Turn

CANNOT = "I cannot do that with the functions and information I have; please tell me what is missing."
DONE = "Done."


class GoldReplayer(Briefed):
    """On each user turn, makes that turn's gold calls (one reply, in order), then answers.

    The turn is counted from the conversation (the user messages so far); the calls come from the
    briefed task's plan, whose call ids ``t<turn>.<n>`` say their turn. A turn without gold calls
    (a missing function or parameter) is answered by asking for what is missing.
    """

    name = "bfcl-gold"

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        return [self._reply(turn) for turn in turns]

    def _reply(self, turn: Turn) -> Reply:
        task = self.task_for(turn.episode_id)
        if turn.messages[-1]["role"] != "user":
            return Reply(text=DONE)
        index = sum(m["role"] == "user" for m in turn.messages) - 1
        calls = [c for c in task.plan if c.id.split(".", 1)[0] == f"t{index}"]
        if not calls:
            return Reply(text=CANNOT)
        tool_calls = [
            {"id": f"call_{index}_{n}", "type": "function", "function": {"name": c.tool, "arguments": dict(c.args)}}
            for n, c in enumerate(calls)
        ]
        return Reply(tool_calls=tool_calls)
