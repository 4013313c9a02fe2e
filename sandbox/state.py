"""The mutable part of an episode: what the agent wrote (bookings, appointments), and the domain's own state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sandbox.seeds import child_seed

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def verification_code(prefix: str, seed: int, *parts: object) -> str:
    """A short code that cannot be guessed without making the call, stable for the same call."""
    n = child_seed(seed, *parts)
    chars = []
    for _ in range(5):
        n, r = divmod(n, len(_CODE_ALPHABET))
        chars.append(_CODE_ALPHABET[r])
    return f"{prefix}-{''.join(chars)}"


@dataclass(frozen=True)
class Write:
    """A write action that succeeded, in canonical tool and argument names."""

    tool: str
    args: dict[str, Any]
    code: str


@dataclass(frozen=True)
class Deception:
    """A plausible but wrong answer a perturbation served (``deceptive_result``, ``deceptive_record``): the tool, the
    turn it came in, and each value it told in place of the true one, as ``(told, truth)`` pairs."""

    tool: str
    turn: int
    values: tuple[tuple[Any, Any], ...]


@dataclass
class State:
    """One episode's mutable state. ``data`` is the domain's own state object, made fresh for the episode
    by its state factory (``Domain.new_state``); tools written as functions receive it. The other fields
    are the sandbox's bookkeeping, which the judge and the perturbations read."""

    writes: list[Write] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsure: list[str] = field(default_factory=list)
    """The tools of the successful calls whose role nobody knows (``Tool.role_known``): they may have written."""
    scratch: dict[str, Any] = field(default_factory=dict)
    """Free room for wrappers that keep per-episode state (a call counter, a token)."""
    deceptions: list[Deception] = field(default_factory=list)
    """The wrong answers served so far: the judge tells a ``deceived`` agent by them."""
    data: Any = None
    turn: int = 0
    """The agent's replies played so far in this episode: a drift's onset counts them."""
    hung: str | None = None
    """Why no tool may be called any more in this episode: a call that gave no answer still runs, in its thread."""

    def next_id(self, prefix: str) -> str:
        n = sum(1 for key in self.records if key.startswith(prefix)) + 1
        return f"{prefix}{n:03d}"
