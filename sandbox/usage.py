"""The tokens an episode cost its agent: prompt (everything sent, turn after turn) and completion (everything said).

Three sources, best first, kept per episode (``Episode.usage``) so that a cached episode still says what it cost:

- ``engine``: the server's own count, the ``usage`` object of each chat-completions reply (the ``openai:`` agent
  puts it in ``Reply.meta["usage"]``, as any agent may);
- ``tokenizer``: the token ids the agent generated from and generated (``Reply.meta["prompt_ids"]`` and
  ``["completion_ids"]``, which ``hf:`` agents give);
- ``estimated``: for an agent that reports neither (a function, a framework, the oracle), four characters a token
  over the conversation as the episode recorded it: each turn's prompt is every message before its reply (the tool
  specifications, sent beside the messages, are not counted), its completion the reply's text and calls.

A source is used for an episode only when every turn of it gave it; else the next one is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

CHARS_PER_TOKEN = 4
SOURCES = ("engine", "tokenizer", "estimated")


def reported(meta: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The tokens the turns' ``Reply.meta`` report, summed, with their source; ``None`` unless every turn did."""
    if not meta:
        return None
    usages = [m.get("usage") for m in meta]
    if all(isinstance(u, dict) and _count(u.get("prompt_tokens")) is not None for u in usages):
        prompt = sum(_count(u["prompt_tokens"]) or 0 for u in usages)  # type: ignore[index]
        completion = sum(_count(u.get("completion_tokens")) or 0 for u in usages)  # type: ignore[union-attr]
        return {"prompt": prompt, "completion": completion, "source": "engine"}
    ids = [(m.get("prompt_ids"), m.get("completion_ids")) for m in meta]
    if all(isinstance(p, Sequence) and isinstance(c, Sequence) for p, c in ids):
        return {"prompt": sum(len(p) for p, _ in ids), "completion": sum(len(c) for _, c in ids), "source": "tokenizer"}  # type: ignore[arg-type]
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def estimated(messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Four characters a token over the recorded conversation: a prompt per reply (what came before it), the reply."""
    prompt = completion = sent = 0
    for message in messages:
        size = _chars(message)
        if message.get("role") == "assistant":
            prompt += sent
            completion += size
        sent += size
    per = CHARS_PER_TOKEN
    return {"prompt": -(-prompt // per), "completion": -(-completion // per), "source": "estimated"}


def _chars(message: dict[str, Any]) -> int:
    content = message.get("content")
    size = len(content) if isinstance(content, str) else 0
    calls = message.get("tool_calls")
    if calls:
        size += len(json.dumps(calls, default=str))
    return size


def tokens(episode: Any) -> dict[str, Any]:
    """``{"prompt", "completion", "source"}`` of an episode: what its agent reported, else the estimate."""
    usage = getattr(episode, "usage", None)
    if isinstance(usage, dict) and usage.get("source") in SOURCES:
        return usage
    return estimated(episode.messages)
