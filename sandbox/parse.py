"""Reading an agent's reply: tool calls in the Hermes/Qwen convention or OpenAI's structure."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    arguments: Any = None
    id: str | None = None


@dataclass
class Parsed:
    """Tool calls, the text around them, or why the reply could not be read."""

    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""
    error: str | None = None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not valid JSON ({type(exc).__name__}: {str(exc)[:80]})") from None


def _call(obj: Any, call_id: str | None = None) -> ToolCall:
    if not isinstance(obj, dict):
        raise ValueError(f"a tool call must be a JSON object, got {type(obj).__name__}")
    if "function" in obj and isinstance(obj["function"], dict):
        return _call(obj["function"], obj.get("id"))
    name, arguments = obj.get("name"), obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call needs a string 'name'")
    if isinstance(arguments, str):
        arguments = _loads(arguments) if arguments.strip() else {}
    return ToolCall(name=name, arguments=arguments, id=call_id)


def parse_reply(text: str, tool_calls: list[dict[str, Any]] | None = None) -> Parsed:
    """Parse one reply. Garbage is reported in ``Parsed.error``, never raised."""
    if not isinstance(text, str):
        return Parsed(error=f"the reply must be text, got {type(text).__name__}")
    try:
        calls = [_call(c) for c in tool_calls or []]
        blocks = _BLOCK.findall(text)
        calls += [_call(_loads(block.strip())) for block in blocks]
    except ValueError as exc:
        return Parsed(text=text, error=f"malformed tool call: {exc}")
    outside = _BLOCK.sub("", text).strip() if blocks else text.strip()
    return Parsed(calls=calls, text=outside)
