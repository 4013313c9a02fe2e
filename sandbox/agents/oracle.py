"""The oracle: a privileged expert that knows the gold plan but acts only through the tools.

It reads the task from ``Turn.info`` (privileged), and everything else (tool results, errors)
from the conversation, as any agent must. It is stateless: each turn it rebuilds where it is
from the messages, matching results to gold calls by the ``tool_call_id`` it gave each call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sandbox.agent import Message, Reply, ToolSpec, Turn
from sandbox.task import Call, Task


def lookup(content: Any, path: str) -> Any:
    """``results.0.name`` → ``content["results"][0]["name"]``; ``None`` where the path breaks."""
    for part in path.split("."):
        if isinstance(content, list) and part.isdigit() and int(part) < len(content):
            content = content[int(part)]
        elif isinstance(content, dict) and part in content:
            content = content[part]
        else:
            return None
    return content


def results_by_call(messages: Sequence[Message]) -> dict[str, Any]:
    """The latest result of each call id, decoded from JSON where it is JSON."""
    results: dict[str, Any] = {}
    for m in messages:
        if m.get("role") == "tool" and m.get("tool_call_id"):
            try:
                results[m["tool_call_id"]] = json.loads(m["content"])
            except (TypeError, ValueError):
                results[m["tool_call_id"]] = m["content"]
    return results


def is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result


def refuse(reason: str) -> Reply:
    return Reply(text=f"I cannot complete this request: {reason}.")


class OracleAgent:
    """Solves every solvable task and refuses every unsolvable one, on the clean sandbox."""

    name = "oracle"

    def fingerprint(self) -> str:
        return "oracle-v1"

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        return [self.reply(turn) for turn in turns]

    def reply(self, turn: Turn) -> Reply:
        task: Task = turn.info["task"]
        if task.unsolvable == "missing_capability":
            return refuse("none of the available tools can do this")
        results = results_by_call(turn.messages)
        for call_id, result in results.items():
            if is_error(result):
                return refuse(f"{call_id} failed: {result.get('message', result['error'])}")
        done = {cid for cid, r in results.items() if not is_error(r)}
        wave = [c for c in task.plan if c.id not in done and set(c.after) <= done]
        if wave:
            return Reply(tool_calls=[self.call(c, turn.tools) for c in wave])
        if not task.solvable:
            return refuse("the tools found nothing to act on")
        return Reply(text=self.answer(task, results))

    def call(self, call: Call, tools: list[ToolSpec]) -> dict[str, Any]:
        return {"id": call.id, "function": {"name": call.tool, "arguments": dict(call.args)}}

    def answer(self, task: Task, results: dict[str, Any]) -> str:
        parts = [f"{key}: {lookup(results.get(src.call), src.path)}" for key, src in task.sources.items()]
        return "; ".join(parts)
