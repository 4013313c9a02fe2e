"""A perturbing MCP proxy: an MCP server (the SDK's own ``Server``) whose tools are a perturbed env's.

The perturbations are the sandbox's env wrappers, so the proxy serves an *env*, not a copy of the
upstream's tool list with edits: the tool list is ``env.tool_specs()`` (renamed, reworded, with decoys,
restructured schemas, a tool removed...), a call is ``env.call(name, arguments)`` (mapped back to the
upstream's names and shapes by the same wrappers an episode goes through, failing where a wrapper makes
it fail) and its result is ``env.observe(result)`` (missing values, shifted formats). Neither fastmcp's
proxy nor its transforms could do that without a second implementation of every perturbation; the SDK's
low-level ``Server`` gives the protocol and both transports (stdio, streamable HTTP).

A :class:`Backend` is what a proxy serves: :class:`EnvBackend` one env, for ``openagent mcp-proxy``;
:class:`~sandbox.domains.mcp.agent.McpAgent` an episode of the sandbox's own loop.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, Protocol

from sandbox.agent import ToolSpec
from sandbox.env import Env


class Backend(Protocol):
    """What a proxy serves: the tools it lists and what a call returns (the text, and whether it failed)."""

    def tool_specs(self) -> list[ToolSpec]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]: ...


class EnvBackend:
    """One env (a case's perturbed env), reset once: the episode that an MCP client plays through the proxy.

    Calls are made one at a time (the env is an episode: its perturbations count calls, hand out tokens).
    """

    def __init__(self, env: Env) -> None:
        self.env = env
        self.messages = env.reset()
        self._lock = threading.Lock()

    def tool_specs(self) -> list[ToolSpec]:
        with self._lock:
            return self.env.tool_specs()

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        with self._lock:
            result = self.env.call(name, arguments)
            return self.env.observe(result), not result.ok

    @property
    def query(self) -> str:
        """The request as the case words it (a query perturbation changes it): the proxy's instructions."""
        return str(self.messages[-1]["content"])


def mcp_tool(spec: ToolSpec) -> Any:
    """A chat-template tool spec as the SDK's ``Tool``."""
    import mcp_types

    function = spec.get("function", spec)
    schema = dict(function.get("parameters") or {"type": "object", "properties": {}})
    return mcp_types.Tool(name=function["name"], description=function.get("description") or "", input_schema=schema)


def build_server(backend: Backend, name: str, version: str = "", instructions: str | None = None) -> Any:
    """The SDK's ``Server`` over ``backend``: ``tools/list`` and ``tools/call``; each call runs in a worker
    thread, so a slow upstream never stalls the proxy's event loop."""
    import anyio.to_thread
    import mcp_types
    from mcp.server import Server

    def schema_of(tool_name: str) -> dict[str, Any] | None:
        for spec in backend.tool_specs():
            function = spec.get("function", spec)
            if function["name"] == tool_name:
                return dict(function.get("parameters") or {})
        return None

    async def list_tools(ctx: Any, params: Any) -> Any:
        specs = await anyio.to_thread.run_sync(backend.tool_specs)
        return mcp_types.ListToolsResult(tools=[mcp_tool(s) for s in specs])

    async def call_tool(ctx: Any, params: Any) -> Any:
        arguments = dict(params.arguments or {})
        text, failed = await anyio.to_thread.run_sync(backend.call, params.name, arguments)
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=failed)

    return Server(name, version=version, instructions=instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool, get_tool_input_schema=schema_of)  # fmt: skip


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` on this process' stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Any, host: str = "127.0.0.1") -> Any:
    """``server`` as a Starlette app of streamable HTTP at ``/mcp``."""
    return server.streamable_http_app(host=host)


class HttpThread:
    """``server`` over streamable HTTP on a loopback port, served by uvicorn in a daemon thread.

    The socket is bound here and handed to uvicorn, so the port (a free one unless given) is this server's
    from the start: no other process can take it between choosing and listening.
    """

    def __init__(self, server: Any, host: str = "127.0.0.1", port: int | None = None) -> None:
        import uvicorn

        self.host = host
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and without it every
        # response waits out a delayed ACK (about 40 ms a call on Linux)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.bind((host, port or 0))
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(http_app(server, host), host=host, port=self.port, log_level="warning",
                                lifespan="on", access_log=False)  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"mcp proxy :{self.port}", daemon=True)  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    def start(self, timeout: float = 10.0) -> HttpThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the MCP proxy did not start on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self, wait: bool = True) -> None:
        """Stop serving; ``wait=False`` returns at once (uvicorn takes a fraction of a second to wind down)."""
        self._server.should_exit = True
        if wait:
            self._thread.join(10)
            self._socket.close()

    def __enter__(self) -> HttpThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def observation_failed(text: str) -> bool:
    """Whether an observation the env rendered is an error (``{"error": ..., "message": ...}``)."""
    try:
        body = json.loads(text)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body and set(body) <= {"error", "message"}


__all__ = ["Backend", "EnvBackend", "HttpThread", "build_server", "http_app", "mcp_tool",
           "observation_failed", "serve_stdio"]  # fmt: skip
