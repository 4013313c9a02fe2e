"""The environment of one BFCL episode: its own backend instances, several user turns, per-turn tools."""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any

from sandbox.agent import ToolSpec
from sandbox.domains.bfcl.backends import build_instances, execute, methods, public_state, snapshot
from sandbox.domains.bfcl.check import Snapshot, Turn, check
from sandbox.domains.bfcl.data import Entry, class_specs
from sandbox.env import Env
from sandbox.prompt import SYSTEM_PROMPT
from sandbox.state import State, Write
from sandbox.task import Task
from sandbox.tools import ToolResult

if TYPE_CHECKING:
    from sandbox.domain import Domain
    from sandbox.judge import Ending, Outcome


class BfclEnv(Env):
    """One BFCL entry as an episode.

    Each episode (each ``reset``) gets fresh backend instances from the entry's ``initial_config``
    (two episodes of one task share nothing); ``call`` runs a backend method with the agent's arguments; when the
    agent answers a turn, :meth:`next_user_message` records what the turn left and gives the next
    user message; :meth:`verdict` judges the whole episode as BFCL's checker does. A call that changes the
    backends' state is noted in ``state.writes``, as the toolbox notes a write (BFCL declares no roles).
    """

    def __init__(self, domain: Domain, entry: Entry, task: Task, system_prompt: str = SYSTEM_PROMPT) -> None:
        self.domain = domain
        self.entry = entry
        self.task = task
        self.world = None
        self.system_prompt = system_prompt
        self.state = State()
        self.instances: dict[str, Any] = {}
        self.turn = 0
        self._methods: dict[str, Any] = {}
        self._turns: list[Turn] = []
        self._results: list[str] = []
        self._calls = 0
        self._errors: list[str] = []
        self._for: State | None = None
        self._seen: Snapshot = {}

    def _episode(self) -> None:
        """Fresh backend instances when a new episode has begun. ``Env.reset`` (which a wrapper's
        reset is too) starts one by giving the env a new :class:`State`: that is what is watched."""
        if self._for is self.state:
            return
        self._for = self.state
        self.instances = build_instances(list(self.entry.classes), self.entry.config, self.entry.long_context)
        self._methods = methods(self.instances)
        self._seen = snapshot(self.instances)
        self.turn, self._turns, self._results, self._calls, self._errors = 0, [], [], 0, []

    def query(self) -> str:
        return self.entry.turns[0]

    def _held_back(self) -> set[str]:
        return {name for t, names in self.entry.holdout.items() if t > self.turn for name in names}

    def tool_specs(self) -> list[ToolSpec]:
        """The functions of the entry's backends, less those held back until a later turn."""
        self._episode()
        hidden = self._held_back()
        return [spec for cls in self.entry.classes for name, spec in class_specs(cls) if name not in hidden]

    def call(self, name: str, arguments: Any) -> ToolResult:
        self._episode()
        result = self._call(name, arguments)
        if result.error is not None:
            self._errors.append(result.error)
        return result

    def _call(self, name: str, arguments: Any) -> ToolResult:
        method = self._methods.get(name) if isinstance(name, str) else None
        if method is None or name in self._held_back():
            known = ", ".join(s["function"]["name"] for s in self.tool_specs())
            return ToolResult(name=str(name), error="unknown_tool", message=f"no tool named {name!r}; tools: {known}")
        if not isinstance(arguments, dict):
            message = f"arguments must be a JSON object, got {type(arguments).__name__}"
            return ToolResult(name=name, error="invalid_arguments", message=message)
        # BFCL runs a call whatever its arguments (a mismatch raises TypeError inside eval, and the
        # error string is its result): the same here, only the error kind is told apart
        self._calls += 1
        # a backend may change what it is given (a post's tags list): BFCL evals each call from its text, so
        # the agent's objects (a reference agent's are its task's gold arguments) must never be the backend's
        given = copy.deepcopy(arguments)
        value, text, exc = execute(method, name, copy.deepcopy(arguments))
        self._results.append(text)
        if self._changed():
            self.state.writes.append(Write(name, given, ""))
        if exc is None:
            return ToolResult(name=name, content=value)
        try:
            inspect.signature(method).bind(**arguments)
        except TypeError:
            return ToolResult(name=name, error="invalid_arguments", message=text)
        return ToolResult(name=name, error="runtime_error", message=text)

    def _changed(self) -> bool:
        """Whether the backends' state differs from what the last call left (BFCL's state checker's view)."""
        if public_state(self.instances) == self._seen:
            return False
        self._seen = snapshot(self.instances)
        return True

    def next_user_message(self) -> str | None:
        """Close the turn the agent just answered; the next turn's user message, or ``None`` after the last."""
        self._episode()
        self._turns.append(Turn(self._calls, tuple(self._results), snapshot(self.instances)))
        self._results, self._calls = [], 0
        self.turn += 1
        return self.entry.turns[self.turn] if self.turn < len(self.entry.turns) else None

    def verdict(self, ending: Ending) -> tuple[Outcome, str] | None:
        """``success`` if BFCL's checks pass on every turn, ``wrong_answer`` (or the tool error that
        explains it) with the failing turn's reason otherwise; other endings go to the common judge."""
        if ending != "answer":
            return None
        self._episode()
        reason = check(self.entry, self._turns)
        if reason is None:
            return "success", ""
        outcome: Outcome = "wrong_answer"
        if "unknown_tool" in self._errors:
            outcome = "invalid_tool"
        elif "invalid_arguments" in self._errors:
            outcome = "invalid_arguments"
        return outcome, f"BFCL check failed at {reason}"
