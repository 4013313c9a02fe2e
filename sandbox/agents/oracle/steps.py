"""What the oracle's planner builds and raises: a :class:`Step` (one call to make), :class:`Blocked` (steps to run
first), :class:`Refusal` (the task cannot be done), and the refusal's reply."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.agent import Reply


def refuse(reason: str) -> Reply:
    return Reply(text=f"I cannot complete this request: {reason}.")


class Refusal(Exception):
    pass


class Blocked(Exception):
    """A step cannot be built yet; ``needs`` are the steps to (re)run first."""

    def __init__(self, *needs: Step) -> None:
        self.needs = needs


@dataclass
class Step:
    id: str
    tool: str
    args: dict[str, Any]
    remap: Callable[[str], dict[str, Any]] | None = None
    """The same arguments for another tool (a redirect target has its own schema)."""
