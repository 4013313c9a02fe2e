"""Reading an agent's reply: tool calls in the Hermes/Qwen convention or OpenAI's structure.

Whatever the agent gives, ``parse_reply`` returns a :class:`Parsed` and never raises. What it
returns is plain JSON that the episode can store and send on: lone surrogates (which no UTF-8
encoder takes) become U+FFFD, and a call whose arguments are not plain JSON (NaN or infinity, a
number too long to print, nesting deeper than :data:`MAX_DEPTH`, a set or an object) or longer than
:data:`MAX_ARGUMENT_CHARS` is a malformed call, as is a reply with more than :data:`MAX_CALLS` calls. A
reply longer than :data:`MAX_REPLY_CHARS` is refused before it is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
MAX_CALLS = 64
"""Tool calls in one reply at most; more is a malformed reply (it keeps a trajectory bounded)."""
MAX_DEPTH = 32
"""Nesting of a call's arguments at most; deeper JSON is malformed (pydantic stops serialising
at a depth not far above, and no tool takes such arguments)."""
MAX_INT_BITS = 13_000
"""Bits of an integer argument at most: Python refuses to print an int over 4,300 digits."""
MAX_REPLY_CHARS = 1_000_000
"""Characters of a reply at most (its text and its structured calls); a longer one is a runaway generation,
refused before it is read, so no step costs more than reading a megabyte."""
MAX_ARGUMENT_CHARS = 50_000
"""Characters of one call's arguments at most (as JSON; a ``<tool_call>`` block as written, before it is read): no
tool takes more, and each call is kept twice in an episode (its step and the conversation), which must stay small
enough to store."""


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


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, since it can be neither sent nor stored.

    A surrogate pair (two code points, as a UTF-16 decoder without ``surrogatepass`` leaves it) is
    joined into the character it encodes.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def json_value(value: Any, depth: int = 0, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` as plain JSON (dicts with string keys, lists, finite numbers, clean strings).

    Raises ``ValueError`` saying what is not JSON; recursion stops at ``max_depth`` levels.
    """
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise ValueError(f"an integer of {value.bit_length()} bits (at most {MAX_INT_BITS})")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a JSON number")
        return float(value)
    if depth >= max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object keys must be strings, got {type(key).__name__}")
            out[clean_text(key)] = json_value(item, depth + 1, max_depth)
        return out
    if isinstance(value, list | tuple):
        return [json_value(item, depth + 1, max_depth) for item in value]
    raise ValueError(f"not a JSON value: {clean_text(type(value).__name__)}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not valid JSON ({type(exc).__name__}: {str(exc)[:80]})") from None


def _call(obj: Any, measured: bool = False) -> ToolCall:
    """The call ``obj`` describes; ``measured``: it was read from text no longer than :data:`MAX_ARGUMENT_CHARS`."""
    if not isinstance(obj, dict):
        raise ValueError(f"a tool call must be a JSON object, got {clean_text(type(obj).__name__)}")
    call_id = None
    if isinstance(obj.get("function"), dict):  # OpenAI's shape: {"id": ..., "function": {...}}
        call_id, obj = obj.get("id"), obj["function"]
    if call_id is not None and not isinstance(call_id, str):
        raise ValueError(f"a tool call's 'id' must be a string, got {clean_text(type(call_id).__name__)}")
    name, arguments = obj.get("name"), obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call needs a string 'name'")
    if isinstance(arguments, str):
        _check_size(len(arguments))
        arguments = _loads(arguments) if arguments.strip() else {}
    arguments = json_value(arguments)
    if not measured and not isinstance(arguments, str | int | float | bool | None):
        _check_size(len(_ARGUMENTS.encode(arguments)))
    return ToolCall(name=clean_text(name), arguments=arguments, id=None if call_id is None else clean_text(call_id))


_ARGUMENTS = json.JSONEncoder(ensure_ascii=False)


def _check_size(chars: int) -> None:
    if chars > MAX_ARGUMENT_CHARS:
        raise ValueError(f"arguments of {chars:,} characters (at most {MAX_ARGUMENT_CHARS:,})")


def _blocks(text: str) -> tuple[list[str], str]:
    """The ``<tool_call>`` blocks of ``text`` (each up to its ``</tool_call>`` or the end) and the text outside
    them; ``str.find`` keeps it linear and fast on a long reply, where a lazy regex took seconds a megabyte."""
    blocks, outside, at = [], [], 0
    while (start := text.find(_OPEN, at)) != -1:
        outside.append(text[at:start])
        end = text.find(_CLOSE, start + len(_OPEN))
        if end == -1:
            blocks.append(text[start + len(_OPEN) :])
            at = len(text)
            break
        blocks.append(text[start + len(_OPEN) : end])
        at = end + len(_CLOSE)
    outside.append(text[at:])
    return blocks, "".join(outside)


def _error(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:
        message = type(exc).__name__
    return clean_text(message[:300])


def parse_reply(text: str, tool_calls: Sequence[dict[str, Any]] | None = None) -> Parsed:
    """Parse one reply. Garbage is reported in ``Parsed.error``, never raised."""
    if not isinstance(text, str):
        return Parsed(error=f"the reply must be text, got {clean_text(type(text).__name__)}")
    if tool_calls is not None and not isinstance(tool_calls, list | tuple):
        return Parsed(error=f"tool_calls must be a list of calls, got {clean_text(type(tool_calls).__name__)}")
    if (size := len(text) + _size(tool_calls)) > MAX_REPLY_CHARS:
        return Parsed(error=f"the reply is {size:,} characters, more than the {MAX_REPLY_CHARS:,} a reply may have")
    text = clean_text(text)
    try:
        calls = [_call(c) for c in tool_calls or ()]
        blocks, outside = _blocks(text) if _OPEN in text else ([], text)
        if len(calls) + len(blocks) > MAX_CALLS:  # before reading them: each may be long
            n = len(calls) + len(blocks)
            return Parsed(text=text, error=f"malformed reply: {n} tool calls (at most {MAX_CALLS})")
        for block in blocks:
            _check_size(len(block))  # before reading it: a block holds its arguments and little else
            calls.append(_call(_loads(block.strip()), measured=True))
    except Exception as exc:  # whatever the reply holds, it is an outcome
        return Parsed(text=text, error=f"malformed tool call: {_error(exc)}")
    return Parsed(calls=calls, text=outside.strip())


def _size(tool_calls: Sequence[Any] | None) -> int:
    """The characters of structured calls' argument strings (the part of a reply that can be long); never raises."""
    total = 0
    try:
        for call in tool_calls or ():
            if isinstance(call, dict):
                inner = call.get("function")
                arguments = (inner if isinstance(inner, dict) else call).get("arguments")
                total += len(arguments) if isinstance(arguments, str) else 0
    except Exception:  # a mapping that fails to be read: _call says what is wrong with it
        pass
    return total
