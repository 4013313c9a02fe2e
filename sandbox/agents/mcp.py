"""An agent that speaks MCP itself, tested through the proxy: :class:`McpAgent`.

``McpAgent(play)`` is a sandbox agent whose every move is made by the user's MCP client:
``play(url, query) -> answer`` connects to ``url`` (any framework, any MCP client), does the request
``query`` with the tools it lists there, and returns its final answer. For each episode a proxy is
served on a loopback port whose tools are the episode's (the case's perturbed tool specs); each call
the client makes there is handed to the episode loop as this agent's move, so the sandbox's own env
dispatches it (mapped back to the server through the perturbations) and its observation goes back to
the client as the call's result. Episodes are therefore cached, recorded, judged and shrunk exactly as
any agent's: ``case.run(McpAgent(play))`` in a ``@openagent.perturb`` test.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox.agent import Reply, RequestFailed, ToolSpec, Turn
from sandbox.proxy.server import HttpThread, build_server, observation_failed

Play = Callable[[str, str], str]
"""``play(url, query) -> answer``: an MCP client's whole episode against the server at ``url``."""


@dataclass
class _Pending:
    """A tool call of the client, waiting for the episode loop to run it."""

    name: str
    arguments: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple[str, bool] = ("", True)


class _Episode:
    """One episode's proxy and client thread; the client's calls and its answer arrive in ``events``."""

    def __init__(self, play: Play, turn: Turn, name: str) -> None:
        self.tools: list[ToolSpec] = list(turn.tools)
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.waiting: dict[str, _Pending] = {}
        self.calls = 0
        self.http = HttpThread(build_server(self, name)).start()
        query = str(turn.messages[-1]["content"])
        self.client = threading.Thread(target=self._play, args=(play, query), name=f"mcp agent {turn.episode_id}",
                                       daemon=True)  # fmt: skip
        self.client.start()

    def _play(self, play: Play, query: str) -> None:
        try:
            self.events.put(("answer", str(play(self.http.url, query))))
        except BaseException as exc:  # the client's failure ends its episode, as agent_error
            self.events.put(("failed", f"{type(exc).__name__}: {exc}"))

    # -- what the proxy asks (its worker threads) ----------------------------------------------------

    def tool_specs(self) -> list[ToolSpec]:
        return self.tools

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        pending = _Pending(name, arguments)
        self.events.put(("call", pending))
        pending.done.wait()
        return pending.result

    # -- what the episode loop asks ------------------------------------------------------------------

    def deliver(self, turn: Turn) -> None:
        """The observations of this agent's last calls, back to the client's waiting calls."""
        self.tools = list(turn.tools)
        for message in reversed(turn.messages):
            if message.get("role") != "tool":
                break
            pending = self.waiting.pop(str(message.get("tool_call_id")), None)
            if pending is not None:
                content = str(message.get("content", ""))
                pending.result = (content, observation_failed(content))
                pending.done.set()

    def move(self, timeout: float) -> Reply | RequestFailed:
        """The client's next move: its calls (those it made at once), or its answer."""
        try:
            kind, value = self.events.get(timeout=timeout)
        except queue.Empty:
            return RequestFailed(f"the MCP client neither called a tool nor answered within {timeout:g}s")
        if kind == "answer":
            return Reply(text=value)
        if kind == "failed":
            return RequestFailed(value)
        calls = [value]
        while True:  # calls the client sent together go in one reply, as parallel calls
            try:
                kind, more = self.events.get_nowait()
            except queue.Empty:
                break
            if kind != "call":
                self.events.put((kind, more))
                break
            calls.append(more)
        tool_calls = []
        for pending in calls:
            self.calls += 1
            call_id = f"mcp{self.calls}"
            self.waiting[call_id] = pending
            tool_calls.append({"id": call_id, "type": "function",
                               "function": {"name": pending.name, "arguments": pending.arguments}})  # fmt: skip
        return Reply(tool_calls=tool_calls)

    def stop(self) -> None:
        for pending in self.waiting.values():  # an episode ended by its step limit: the client's calls fail
            pending.result = ('{"error": "fatal", "message": "the episode is over"}', True)
            pending.done.set()
        self.http.stop(wait=False)  # the next episode need not wait for this one's server to wind down


class McpAgent:
    """A sandbox agent played by an MCP client through a per-episode proxy; see the module's docstring.

    ``timeout``: seconds the client may take between two moves (a call or its answer).
    """

    def __init__(self, play: Play, name: str = "mcp-agent", timeout: float = 60.0) -> None:
        self.play = play
        self.name = name
        self.timeout = timeout
        self._episodes: dict[str, _Episode] = {}

    def fingerprint(self) -> str:
        from sandbox.fingerprint import function_key

        return f"mcp-agent:{self.name}:{function_key(self.play, module_source=True)}"

    def act(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        replies: list[Reply | RequestFailed] = []
        for turn in turns:
            episode = self._episodes.get(turn.episode_id)
            if episode is None:
                try:
                    episode = self._episodes[turn.episode_id] = _Episode(self.play, turn, self.name)
                except RuntimeError as exc:
                    replies.append(RequestFailed(str(exc)))
                    continue
            else:
                episode.deliver(turn)
            replies.append(episode.move(self.timeout))
        return replies

    def close(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            episode = self._episodes.pop(episode_id, None)
            if episode is not None:
                episode.stop()


__all__ = ["McpAgent", "Play"]
