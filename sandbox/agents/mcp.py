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

from collections.abc import Callable
from typing import Any

from sandbox.agent import ToolSpec, Turn
from sandbox.agents.session import LoopSession, SessionAgent
from sandbox.proxy.server import HttpThread, build_server, observation_failed

Play = Callable[[str, str], str]
"""``play(url, query) -> answer``: an MCP client's whole episode against the server at ``url``."""


class _Proxy:
    """What one episode's proxy serves: its session's tools and calls; ``revision`` counts the times a turn brought
    a new tool list (drift), which the proxy announces to the client as ``notifications/tools/list_changed``."""

    def __init__(self, session: LoopSession) -> None:
        self.session = session
        self.revision = 0
        session.on_tools = self.changed

    def changed(self, tools: list[ToolSpec]) -> None:
        self.revision += 1

    def tool_specs(self) -> list[ToolSpec]:
        return self.session.tool_specs()

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        text = self.session.call(name, arguments)
        return text, observation_failed(text)


class McpAgent(SessionAgent):
    """A sandbox agent played by an MCP client through a per-episode proxy; see the module's docstring.

    ``timeout``: seconds the client may take between two moves (a call or its answer).
    """

    def __init__(self, play: Play, name: str = "mcp-agent", timeout: float = 60.0) -> None:
        self.play = play
        self.name = name
        self.timeout = timeout

    def fingerprint(self) -> str:
        from sandbox.fingerprint import function_key

        return f"mcp-agent:{self.name}:{function_key(self.play, module_source=True)}"

    def open(self, turn: Turn) -> LoopSession:
        session = LoopSession(lambda query: self.play(http.url, query), turn, f"mcp agent {self.name}")
        http = HttpThread(build_server(_Proxy(session), self.name)).start()
        # the next episode need not wait for this one's server to wind down
        session.closers.append(lambda: http.stop(wait=False))
        return session.start(turn)


__all__ = ["McpAgent", "Play"]
