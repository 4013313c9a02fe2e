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
    usages = [u for m in meta if isinstance(u := m.get("usage"), dict)]
    prompts = [_count(u.get("prompt_tokens")) for u in usages]
    if len(usages) == len(meta) and all(n is not None for n in prompts):
        prompt = sum(n or 0 for n in prompts)
        completion = sum(_count(u.get("completion_tokens")) or 0 for u in usages)
        return {"prompt": prompt, "completion": completion, "source": "engine"}
    ids = [
        (p, c)
        for m in meta
        if isinstance(p := m.get("prompt_ids"), Sequence) and isinstance(c := m.get("completion_ids"), Sequence)
    ]
    if len(ids) == len(meta):
        return {"prompt": sum(len(p) for p, _ in ids), "completion": sum(len(c) for _, c in ids), "source": "tokenizer"}
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
