"""One episode of an agent that owns its loop, played inside the sandbox's own: :class:`LoopSession`.

The client (an MCP client behind a proxy, a framework agent handed the tools as callables) runs in a
thread of its own, from the request to its final answer. Each tool call it makes waits in ``call`` while
the episode loop takes it as the agent's move (``move``), dispatches it through the env like any agent's
call, and hands the observation back (``deliver``); one call is one move. So the episode is recorded,
judged, cached and shrunk like any other; the client never sees the sandbox.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox.agent import Reply, RequestFailed, ToolSpec, Turn

Client = Callable[[str], str]
"""``client(request) -> answer``: the whole of one user turn, played by the agent that owns its loop."""

OVER = '{"error": "fatal", "message": "the episode is over"}'
"""What a call gets once its episode has ended (its step limit reached, or its answer given)."""


@dataclass
class _Pending:
    """A tool call of the client, waiting for the episode loop to run it."""

    name: str
    arguments: Any
    done: threading.Event = field(default_factory=threading.Event)
    result: str = OVER


class LoopSession:
    """One episode's client thread; its calls and its answer arrive in ``events``.

    ``on_tools`` is called with the new tool specs when a turn brings a different list (drift), before the
    calls that wait are answered: the client's next step sees the new tools.
    """

    def __init__(self, client: Client, turn: Turn, name: str,
                 on_tools: Callable[[list[ToolSpec]], None] | None = None) -> None:  # fmt: skip
        self.client = client
        self.name = name
        self.tools: list[ToolSpec] = list(turn.tools)
        self.on_tools = on_tools
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.waiting: dict[str, _Pending] = {}
        self.calls = 0
        self.over = False
        self.closers: list[Callable[[], None]] = []
        """Called by ``stop``, after the waiting calls are answered (a proxy's server stops there)."""
        self._lock = threading.Lock()

    def start(self, turn: Turn) -> LoopSession:
        """Play the user's message that ends ``turn``: the request, or the next user turn of a task of several."""
        request = str(turn.messages[-1].get("content", ""))
        thread = threading.Thread(target=self._play, args=(request,), name=f"{self.name} {turn.episode_id}",
                                  daemon=True)  # fmt: skip
        thread.start()
        return self

    def _play(self, request: str) -> None:
        try:
            self.events.put(("answer", str(self.client(request))))
        except BaseException as exc:  # the client's failure ends its episode, as agent_error
            self.events.put(("failed", f"{type(exc).__name__}: {exc}"))
        finally:
            close_thread_loop()

    # -- what the client asks (its own threads) -------------------------------------------------------

    def tool_specs(self) -> list[ToolSpec]:
        return self.tools

    def call(self, name: str, arguments: Any) -> str:
        """The observation of a call, once the episode loop has run it (an error is an observation too)."""
        pending = _Pending(name, arguments)
        with self._lock:
            if self.over:
                return OVER
            self.events.put(("call", pending))
        pending.done.wait()
        return pending.result

    # -- what the episode loop asks -------------------------------------------------------------------

    def deliver(self, turn: Turn) -> None:
        """The observations of this agent's last calls, back to the client's waiting calls; a new user turn
        (a task of several) is played as a new request."""
        if turn.tools != self.tools:
            self.tools = list(turn.tools)
            if self.on_tools is not None:
                self.on_tools(self.tools)
        if turn.messages and turn.messages[-1].get("role") == "user":
            self.start(turn)
            return
        for message in reversed(turn.messages):
            if message.get("role") == "system":  # a notice after the observations: the tool list changed
                continue
            if message.get("role") != "tool":
                break
            pending = self.waiting.pop(str(message.get("tool_call_id")), None)
            if pending is not None:
                pending.result = str(message.get("content", ""))
                pending.done.set()

    def move(self, timeout: float) -> Reply | RequestFailed:
        """The client's next move: one call, or its answer.

        One call a move, even where the client makes several at once (a framework's parallel tool calls): which
        of them reach the loop together is a race between threads, and an episode must not depend on it (its
        steps, its step budget, the turn a drift starts after). Their order stays the order they arrived in.
        """
        try:
            kind, value = self.events.get(timeout=timeout)
        except queue.Empty:
            return RequestFailed(f"the agent neither called a tool nor answered within {timeout:g}s")
        if kind == "answer":
            return Reply(text=value)
        if kind == "failed":
            return RequestFailed(value)
        self.calls += 1
        call_id = f"call{self.calls}"
        self.waiting[call_id] = value
        return Reply(tool_calls=[{"id": call_id, "type": "function",
                                  "function": {"name": value.name, "arguments": value.arguments}}])  # fmt: skip

    def stop(self) -> None:
        """End the episode: the calls that wait, and any the client makes later, get :data:`OVER`."""
        with self._lock:
            self.over = True
        while True:
            try:
                kind, value = self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "call":
                self.waiting[f"late{id(value)}"] = value
        for pending in self.waiting.values():
            pending.result = OVER
            pending.done.set()
        self.waiting.clear()
        for closer in self.closers:
            closer()


def close_thread_loop() -> None:
    """Close the event loop a framework left open on this thread, as ``asyncio.run`` closes its own.

    pydantic-ai's ``run_sync`` and the Agents SDK's ``Runner.run_sync`` make a loop for the thread and leave it
    open: its selector's descriptors, and the threads of its default executor (where sync tools ran), would
    wait for the garbage collector, so a run of many episodes would run out of descriptors. Called after the
    client's answer is handed over, so that a tool call still waiting is answered (by ``stop``) and its thread ends.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # no loop was set on this thread
            return
    if loop.is_running() or loop.is_closed():
        return
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


class SessionAgent:
    """A sandbox agent whose moves are made by a client that owns its loop, one :class:`LoopSession` an
    episode; subclasses say how a session starts (``open``). ``timeout``: seconds the client may take
    between two moves (a call or its answer)."""

    timeout: float = 60.0

    def open(self, turn: Turn) -> LoopSession:
        """The started session of the episode whose first turn is ``turn``; a RuntimeError if it cannot start."""
        raise NotImplementedError

    @property
    def _sessions(self) -> dict[str, LoopSession]:
        return vars(self).setdefault("_open_sessions", {})

    def act(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        replies: list[Reply | RequestFailed] = []
        for turn in turns:
            session = self._sessions.get(turn.episode_id)
            if session is None:
                try:
                    session = self._sessions[turn.episode_id] = self.open(turn)
                except RuntimeError as exc:
                    replies.append(RequestFailed(str(exc)))
                    continue
            else:
                session.deliver(turn)
            replies.append(session.move(self.timeout))
        return replies

    def close(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            session = self._sessions.pop(episode_id, None)
            if session is not None:
                session.stop()


__all__ = ["OVER", "Client", "LoopSession", "SessionAgent", "close_thread_loop"]
