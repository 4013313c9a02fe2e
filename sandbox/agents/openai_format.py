"""The chat-completions wire format: our messages as the server takes them (:func:`to_openai_messages`) and its
reply as ours (:func:`read_reply`), a reply that cannot be read becoming a :class:`~sandbox.agent.RequestFailed`
that says what is wrong."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sandbox.agent import Message, Reply, RequestFailed
from sandbox.redact import redact


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in the chat-completions wire format: arguments as JSON strings, tool results with ids."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for n, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls: list[dict[str, Any]] = []
            for i, call in enumerate(m["tool_calls"]):
                fn = call.get("function", call)
                args = fn.get("arguments", {})
                call_id = call.get("id") or f"call_{n}_{i}"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            pending = [c["id"] for c in calls]
            # No text goes as no "content" key: servers that type it as a string (llama-cpp-python) refuse a null.
            said = {"content": m["content"]} if m.get("content") else {}
            out.append({"role": "assistant", **said, "tool_calls": calls})
        elif role == "tool":
            call_id = m.get("tool_call_id") or (pending.pop(0) if pending else f"call_{n}")
            if call_id in pending:
                pending.remove(call_id)
            out.append({"role": "tool", "tool_call_id": call_id, "content": str(m.get("content", ""))})
        else:
            out.append({"role": role, "content": m.get("content", "")})
    return out


def read_reply(data: Any) -> Reply | RequestFailed:
    """A chat-completions response as a :class:`Reply`, or a :class:`RequestFailed` that says what is wrong."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return RequestFailed(f"the server's reply has no choices: {clip(data)}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return RequestFailed(f"the server's reply has no message in choice 0: {clip(choices[0])}")
    content = message.get("content")
    if isinstance(content, list):  # content parts, as some servers send them
        content = "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is not None and not isinstance(content, str):
        return RequestFailed(f"the server's message content is not text: {clip(content)}")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        return RequestFailed(f"the server's tool_calls is not a list: {clip(raw_calls)}")
    calls = []
    for i, call in enumerate(raw_calls):
        fn = call.get("function") if isinstance(call, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(fn, dict) or not isinstance(name, str) or not name:
            return RequestFailed(f"the server's tool call {i} has no function name (a string): {clip(call)}")
        args = fn.get("arguments")
        if args is None:
            args = "{}"
        if not isinstance(args, str | dict):
            return RequestFailed(f"the server's tool call {i} has arguments that are neither JSON text nor an object")
        call_id = call.get("id")
        calls.append(
            {"id": call_id if isinstance(call_id, str) else None, "function": {"name": name, "arguments": args}}
        )
    usage = data.get("usage")  # the engine's token count, for the report's cost (sandbox.usage)
    return Reply(text=content or "", tool_calls=calls or None, meta={"usage": usage} if isinstance(usage, dict) else {})


def clip(value: Any, n: int = 300) -> str:
    """The start of a server's text for a message, secrets redacted first (so a cut never leaves half a key)."""
    text = redact(value.decode(errors="replace") if isinstance(value, bytes) else repr(value))
    return text if len(text) <= n else text[:n] + "..."


__all__ = ["clip", "read_reply", "to_openai_messages"]
