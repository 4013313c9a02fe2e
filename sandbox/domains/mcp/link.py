"""A domain's hold on its MCP server, and the per-episode state that calls through it.

Two ways to keep episodes apart, chosen by ``reset``:

- ``"restart"``: each episode starts its own server (a stdio process, or a fresh in-memory object from a
  factory) on first use and closes it when the episode's state is dropped. Isolated by construction.
- a shared server, brought back to its first state by a tool it offers (``"tool:reset"``), by the user's
  hook (``reset(connection)``), or not at all (``None``, a server with no state). The episode loop runs a
  batch in lockstep (a case beside its clean twin), so two episodes may take turns on one server: the
  server belongs to one episode at a time, and an episode that takes it back has it reset and its own
  calls so far replayed, in order, before its next call. Deterministic servers (which replay and
  shrinking need anyway) end up exactly where that episode left them.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sandbox.domains.mcp.connection import DEFAULT_TIMEOUT, Connection, LoopMode, ServerFault
from sandbox.domains.mcp.target import ServerTarget, is_server
from sandbox.errors import UsageError

Reset = str | Callable[[Connection], Any] | None


def check_reset(reset: Reset, target: ServerTarget) -> Reset:
    if reset is None or callable(reset):
        return reset
    if reset == "restart":
        if target.kind == "http" or (target.kind == "memory" and is_server(target.server)):
            what = "a URL" if target.kind == "http" else "a server object (give a function that builds one)"
            raise UsageError(
                f"MCP server {target.label}: reset='restart' starts a fresh server per episode, which {what} cannot; "
                "or give reset='tool:NAME' (a reset tool the server offers), a function reset(connection), or None"
            )
        return reset
    if isinstance(reset, str) and reset.startswith("tool:") and reset.removeprefix("tool:"):
        return reset
    raise UsageError(f"reset={reset!r}: use 'restart', 'tool:NAME', a function reset(connection), or None")


@dataclass(eq=False)
class ServerLink:
    """The server of one domain: how to reach it, how to reset it, and who holds it now."""

    target: ServerTarget
    reset: Reset = None
    timeout: float = DEFAULT_TIMEOUT
    inspect: Callable[[Callable[[str, dict[str, Any]], Any]], Any] | str | None = None
    loop: LoopMode = "thread"
    """Who runs each connection's event loop (:class:`~sandbox.domains.mcp.connection.Connection`)."""
    _shared: Connection | None = field(default=None, repr=False)
    _owner: Any = field(default=None, repr=False)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def isolated(self) -> bool:
        return self.reset == "restart"

    @property
    def reset_tool(self) -> str | None:
        reset = self.reset
        return reset.removeprefix("tool:") if isinstance(reset, str) and reset.startswith("tool:") else None

    def connect(self) -> Connection:
        """A new connection (a new process for stdio); a :class:`ServerFault` if the server does not start."""
        return Connection(self.target, self.timeout, loop=self.loop)

    def adopt(self, connection: Connection) -> None:
        """Serve the episodes of a shared server on ``connection`` (the one the domain was built over)."""
        with self.lock:
            self._shared, self._owner = connection, None

    def shared(self) -> Connection:
        """The shared connection, started again if the server went away."""
        with self.lock:
            if self._shared is None or self._shared.broken is not None:
                if self._shared is not None:
                    self._shared.close()
                self._owner = None
                self._shared = self.connect()
            return self._shared

    def take(self, state: McpState) -> Connection:
        """The shared connection with the server in ``state``'s state: reset and replayed if another episode had it."""
        connection = self.shared()
        owner = self._owner() if self._owner is not None else None
        if owner is not state:
            self._reset(connection)
            for name, arguments in state.sent:
                try:
                    connection.call(name, arguments)
                except ServerFault as fault:
                    if fault.kind == "fatal":
                        raise
            self._owner = weakref.ref(state)
        return connection

    def _reset(self, connection: Connection) -> None:
        tool = self.reset_tool
        if tool is not None:
            connection.call(tool, {})
        elif callable(self.reset):
            self.reset(connection)

    def close(self) -> None:
        with self.lock:
            if self._shared is not None:
                self._shared.close()
                self._shared = None


class McpState:
    """One episode's hold on the server: its calls go through here.

    ``results`` is what the server returned to this episode, in order (``(tool, arguments, result)``), for
    a task's ``check``; :meth:`call` calls a tool for a check or a hook (not recorded). For comparing end
    states the state reads as what the domain's ``inspect`` returns (nothing without one).
    """

    def __init__(self, link: ServerLink) -> None:
        self._link = link
        self._own: Connection | None = None
        self.world_failure: str | None = None
        """How the server failed under this episode (it exited, hung, would not start), if it did: the episode
        is then the world's (``world_error``), not the agent's."""
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.results: list[tuple[str, dict[str, Any], Any]] = []

    def _connection(self) -> Connection:
        if not self._link.isolated:
            return self._link.take(self)
        if self._own is None or self._own.broken is not None:
            if self._own is not None:  # this episode's own server died: its later calls fail, as they would
                label = self._link.target.label
                raise ServerFault("fatal", f"the MCP server {label} is gone: {self._own.broken}", True)
            self._own = self._link.connect()
            weakref.finalize(self, self._own.close)
        return self._own

    def _held(self) -> Any:
        """The lock a call holds: the shared server's (one episode at a time on it), none for an own server."""
        return contextlib.nullcontext() if self._link.isolated else self._link.lock

    def send(self, name: str, arguments: dict[str, Any]) -> Any:
        """An agent's call of ``name``: recorded, so a shared server can be brought back to this episode."""
        with self._held(), self._watched():
            connection = self._connection()
            self.sent.append((name, dict(arguments)))
            result = connection.call(name, arguments)
        self.results.append((name, dict(arguments), result))
        return result

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool outside the episode's record (for a check, an end state, a hook)."""
        with self._held(), self._watched():
            return self._connection().call(name, dict(arguments or {}))

    @contextlib.contextmanager
    def _watched(self) -> Iterator[None]:
        try:
            yield
        except ServerFault as fault:
            if fault.world and self.world_failure is None:
                self.world_failure = fault.message
            raise

    def model_dump(self) -> Any:
        """The server's state as ``inspect`` reads it (``sandbox.end_state.snapshot`` asks for this)."""
        inspect = self._link.inspect
        if inspect is None:
            return {}
        try:
            if isinstance(inspect, str):
                return self.call(inspect.removeprefix("tool:"), {})
            return inspect(self.call)
        except ServerFault as fault:
            return {"error": fault.kind, "message": fault.message}

    def close(self) -> None:
        """Stop this episode's own server, if it started one (a shared server stays)."""
        if self._own is not None:
            self._own.close()

    def __repr__(self) -> str:
        return f"McpState({self._link.target.label}, {len(self.sent)} calls)"


__all__ = ["McpState", "Reset", "ServerLink", "check_reset"]
