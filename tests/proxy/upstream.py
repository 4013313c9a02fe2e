"""A model for the LLM proxy's tests: the oracle behind an OpenAI-compatible loopback server.

Each conversation is told apart by its first user message (the task's query), on which the oracle is briefed; the
request's messages and tools are what it reads, so it acts on what the framework or the ``openai:`` agent sent.
A streamed request gets the reply as server-sent events.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from sandbox.agent import Reply, Turn
from sandbox.agents import OracleAgent
from sandbox.parse import parse_reply
from sandbox.proxy.llm import sse_chunks
from sandbox.task import Task
from tests.loopback import LoopbackServer

MODEL = "oracle"


class OracleServer(LoopbackServer):
    """The oracle as an OpenAI-compatible model; ``brief(tasks)`` before the episodes; ``chats`` counts requests."""

    def __init__(self) -> None:
        self.oracle = OracleAgent()
        self.chats = 0
        self._ids = itertools.count()
        super().__init__(self._respond)

    def brief(self, tasks: list[Task]) -> None:
        for task in tasks:
            self.oracle.brief(task.query, task)

    def _respond(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        if method == "GET" and path.endswith("/models"):
            return 200, {}, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]}
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            return 404, {}, {"error": {"message": f"no route {method} {path}"}}
        with self.lock:
            self.chats += 1
        messages = _ours_all(body["messages"], {t["function"]["name"] for t in body.get("tools") or []})
        user = next(m["content"] for m in messages if m["role"] == "user")
        [reply] = self.oracle.act([Turn(user, messages, body.get("tools") or [])])
        reply = Reply(text=reply) if isinstance(reply, str) else reply
        parsed = parse_reply(reply.text, reply.tool_calls)
        calls = [{"id": c.id or f"call_{next(self._ids)}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                 for c in parsed.calls]  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": parsed.text or None}
        if calls:
            message["tool_calls"] = calls
        completion = {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 0, "model": MODEL,
                      "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
        if body.get("stream"):
            return 200, {"Content-Type": "text/event-stream"}, b"".join(sse_chunks(completion))
        return 200, {}, completion


def _ours_all(messages: list[dict[str, Any]], offered: set[str]) -> list[dict[str, Any]]:
    """Wire messages as the sandbox's; a tool result gets the name of the call it answers. A call to a tool not
    offered, and its result, are left out: the oracle never makes one (the proxy put it there)."""
    out, names, dropped = [], {}, set()
    for message in map(_ours, messages):
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant":  # the results that follow answer this message's calls
            dropped = {c.get("id") for c in calls if c["function"].get("name") not in offered}
        kept = [c for c in calls if c.get("id") not in dropped]
        names |= {c.get("id"): c["function"].get("name") for c in kept}
        if calls:
            message["tool_calls"] = kept
            if not kept and not message.get("content"):
                continue
        if message.get("role") == "tool":
            if message.get("tool_call_id") in dropped:
                continue
            message.setdefault("name", names.get(message.get("tool_call_id"), ""))
        out.append(message)
    return out


def _ours(message: dict[str, Any]) -> dict[str, Any]:
    """A wire message as the sandbox's: text content, arguments as objects."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    elif content is None:
        out["content"] = ""
    calls = []
    for call in out.get("tool_calls") or []:
        function = dict(call.get("function", {}))
        with contextlib.suppress(TypeError, ValueError):  # a malformed one stays the text it is
            function["arguments"] = json.loads(function.get("arguments") or "{}")
        calls.append({**call, "function": function})
    if calls:
        out["tool_calls"] = calls
    return out
