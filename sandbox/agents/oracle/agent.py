"""The oracle agent: each turn, the part of the briefed task the user turn asks for, planned afresh."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sandbox.agent import Briefed, Reply, Turn
from sandbox.agents.oracle.observations import View
from sandbox.agents.oracle.planner import Planner
from sandbox.agents.oracle.steps import Refusal, refuse
from sandbox.budget import user_turns
from sandbox.task import Task

DONE = "Done."
NOTHING_TO_CALL = "I cannot do that with the functions and information I have; please tell me what is missing."


def user_turn(task: Task, messages: Sequence[dict[str, Any]]) -> Task | None:
    """The part of ``task`` that the user turn now played asks for: for a task of several user turns (every
    call id ``t<turn>.<n>``), the gold calls of that turn (counted from the user messages so far, as
    :class:`~sandbox.domains.bfcl.replayer.GoldReplayer` counts), each after only calls of its own turn (those
    of the turns before are done); ``None`` when the turn has none. Any other task is itself."""
    turns = user_turns(task)
    if turns is None:
        return task
    index = sum(m.get("role") == "user" for m in messages) - 1
    calls = [c for c, t in zip(task.plan, turns, strict=True) if t == index]
    ids = {c.id for c in calls}
    plan = tuple(c.model_copy(update={"after": tuple(d for d in c.after if d in ids)}) for c in calls)
    return task.model_copy(update={"plan": plan}) if plan else None


class OracleAgent(Briefed):
    """Solves every solvable case and refuses every unsolvable one, perturbed or clean.

    A reference agent: it must be briefed on each episode's task (``sandbox.run_episodes`` does it).
    """

    name = "oracle"

    def fingerprint(self) -> str:
        return "oracle-v13"

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        return [self.reply(turn) for turn in turns]

    def reply(self, turn: Turn) -> Reply:
        task = user_turn(self.task_for(turn.episode_id), turn.messages)
        if task is None:  # a turn of a multi-turn task that no gold call answers: a function or detail is missing
            return Reply(text=NOTHING_TO_CALL)
        try:
            reply = Planner(View.read(turn, task)).next()
            if reply.text == "" and not reply.tool_calls and user_turns(task) is not None:
                return Reply(text=DONE)  # a user turn's calls all made; nothing to report beyond them
            return reply
        except Refusal as refusal:
            return refuse(str(refusal))
