"""The agent protocol: a batch of conversations in, a batch of replies out.

Taking a batch lets a model agent generate for many episodes in one forward pass and an HTTP
agent send its requests concurrently. ``Turn.episode_id`` is stable across an episode's turns,
so an agent can keep per-episode state (a model keeps its KV cache); ``close`` tells it which
episodes ended, so it can free that state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
"""A chat message in the Hugging Face / OpenAI format (``role``, ``content``, ``tool_calls``)."""
ToolSpec = dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """What an agent sees when it is its turn in one episode."""

    episode_id: str
    messages: list[Message]
    tools: list[ToolSpec]
    info: dict[str, Any] = field(default_factory=dict)
    """Privileged facts (the task, the perturbation stack) for reference agents only; a model
    agent must ignore it, as Gymnasium agents ignore ``info``."""


@dataclass
class Reply:
    """An agent's reply: text (possibly holding ``<tool_call>`` blocks) and/or structured calls.

    ``tool_calls`` takes OpenAI-style structured calls from HTTP agents:
    ``[{"id": ..., "function": {"name": ..., "arguments": "<json>" or {...}}}]``.
    ``meta`` carries what a trainer needs (token ids, log-probabilities); the runner keeps it.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Agent(Protocol):
    """Anything with ``act``; ``fingerprint`` keys the episode cache, ``close`` frees state."""

    def act(self, turns: Sequence[Turn]) -> Sequence[Reply | str]: ...


def fingerprint(agent: Any) -> str:
    """The agent's cache key: its ``fingerprint()`` if it has one, else its class name."""
    fp = getattr(agent, "fingerprint", None)
    if callable(fp):
        return str(fp())
    return f"{type(agent).__module__}.{type(agent).__qualname__}"


def close(agent: Any, episode_ids: Sequence[str]) -> None:
    closer = getattr(agent, "close", None)
    if callable(closer) and episode_ids:
        closer(list(episode_ids))


class FunctionAgent:
    """Adapts a plain ``fn(messages, tools) -> str | Reply`` to the batch protocol."""

    def __init__(self, fn: Callable[[list[Message], list[ToolSpec]], Reply | str], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", "function")

    def act(self, turns: Sequence[Turn]) -> list[Reply | str]:
        return [self.fn(turn.messages, turn.tools) for turn in turns]

    def fingerprint(self) -> str:
        return f"function:{getattr(self.fn, '__module__', '?')}.{self.name}"


def as_agent(obj: Any) -> Agent:
    """An agent as given, or a plain callable wrapped in :class:`FunctionAgent`."""
    # A method on the class settles it; isinstance on a runtime Protocol costs tens of microseconds.
    if callable(getattr(type(obj), "act", None)) or isinstance(obj, Agent):
        return obj
    if callable(obj):
        return FunctionAgent(obj)
    raise TypeError(
        f"expected an agent (an object with act(turns)) or a function fn(messages, tools) -> str, "
        f"got {type(obj).__name__}"
    )
