"""A perturbing MCP proxy: an MCP server (the SDK's own ``Server``) whose tools are a perturbed env's.

The perturbations are the sandbox's env wrappers, so the proxy serves an *env*, not a copy of the
upstream's tool list with edits: the tool list is ``env.tool_specs()`` (renamed, reworded, with decoys,
restructured schemas, a tool removed...), a call is ``env.call(name, arguments)`` (mapped back to the
upstream's names and shapes by the same wrappers an episode goes through, failing where a wrapper makes
it fail) and its result is ``env.observe(result)`` (missing values, shifted formats). Neither fastmcp's
proxy nor its transforms could do that without a second implementation of every perturbation; the SDK's
low-level ``Server`` gives the protocol and both transports (stdio, streamable HTTP).

A :class:`Backend` is what a proxy serves: :class:`EnvBackend` one env, for ``openagent mcp-proxy``;
:class:`~sandbox.agents.mcp.McpAgent` an episode of the sandbox's own loop.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import sys
import threading
import time
from typing import Any, Protocol

if sys.platform != "win32":
    import fcntl

from sandbox.agent import ToolSpec
from sandbox.env import Env
from sandbox.errors import WorldFailure


class Backend(Protocol):
    """What a proxy serves: the tools it lists and what a call returns (the text, and whether it failed).

    ``revision`` counts the changes of the tool list so far (drift): when a call leaves it higher than the proxy
    last announced, the proxy tells its client ``notifications/tools/list_changed`` before the call's result.
    """

    revision: int

    def tool_specs(self) -> list[ToolSpec]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]: ...


class EnvBackend:
    """One env (a case's perturbed env), reset once: the episode that an MCP client plays through the proxy.

    Calls are made one at a time (the env is an episode: its perturbations count calls, hand out tokens). The
    proxy sees calls, not an agent's turns: each call is a turn, so a drift ``after=k`` starts after the k-th call.
    """

    def __init__(self, env: Env) -> None:
        self.env = env
        self.messages = env.reset()
        self.revision = 0
        self._onsets = env.onsets()
        self._lock = threading.Lock()
        self.annotations: dict[str, dict[str, Any]] = dict(getattr(env.unwrapped.domain, "annotations", None) or {})
        """The upstream's tool annotations by tool name: listed with a tool that keeps its name."""

    def tool_specs(self) -> list[ToolSpec]:
        with self._lock:
            return self.env.tool_specs()

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        with self._lock:
            try:
                result = self.env.call(name, arguments)
            except WorldFailure as exc:  # the upstream failed: its client reads that, as from the server itself
                return json.dumps({"error": "fatal", "message": str(exc)}), True
            observation = self.env.observe(result), not result.ok
            before = self.env.tool_specs() if self.env.state.turn + 1 in self._onsets else None
            self.env.state.turn += 1
            if before is not None and self.env.tool_specs() != before:
                self.revision += 1
            return observation

    @property
    def query(self) -> str:
        """The request as the case words it (a query perturbation changes it): the proxy's instructions."""
        return str(self.messages[-1]["content"])


def mcp_tool(spec: ToolSpec, annotations: dict[str, Any] | None = None) -> Any:
    """A chat-template tool spec as the SDK's ``Tool``, with the upstream's ``annotations`` where given."""
    import mcp_types

    function = spec.get("function", spec)
    schema = dict(function.get("parameters") or {"type": "object", "properties": {}})
    hints = mcp_types.ToolAnnotations(**annotations) if annotations else None
    return mcp_types.Tool(name=function["name"], description=function.get("description") or "", input_schema=schema,
                          annotations=hints)  # fmt: skip


def build_server(backend: Backend, name: str, version: str = "", instructions: str | None = None,
                 inline: bool = False) -> Any:  # fmt: skip
    """The SDK's ``Server`` over ``backend``: ``tools/list`` and ``tools/call``. Each call runs in a worker
    thread, so a slow upstream never stalls the proxy's event loop; ``inline=True`` runs it on the loop, which
    waits for it: two thread wakeups fewer a call, for a server with one client that sends its requests in
    turn (stdio), where nothing else is waiting to be served meanwhile."""
    import anyio.to_thread
    import mcp_types
    from mcp.server import Server
    from mcp.server.lowlevel.server import NotificationOptions
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    bus = InMemorySubscriptionBus()
    announced = [backend.revision]

    async def announce(ctx: Any) -> None:
        """``notifications/tools/list_changed`` where the tool list changed since the last one: to a client of
        the 2026-07-28 protocol on its ``subscriptions/listen`` stream, to an older one on the call's own stream
        (before the call's result, so it lists the tools again before its next call)."""
        if backend.revision == announced[0]:
            return
        announced[0] = backend.revision
        await bus.publish(ToolsListChanged())
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_notification(mcp_types.ToolListChangedNotification(),
                                                related_request_id=ctx.request_id)  # fmt: skip

    def schema_of(tool_name: str) -> dict[str, Any] | None:
        for spec in backend.tool_specs():
            function = spec.get("function", spec)
            if function["name"] == tool_name:
                return dict(function.get("parameters") or {})
        return None

    async def run(function: Any, *args: Any) -> Any:
        return function(*args) if inline else await anyio.to_thread.run_sync(function, *args)

    annotated: dict[str, dict[str, Any]] = getattr(backend, "annotations", None) or {}

    async def list_tools(ctx: Any, params: Any) -> Any:
        specs = await run(backend.tool_specs)
        return mcp_types.ListToolsResult(tools=[mcp_tool(s, annotated.get(_name(s))) for s in specs])

    async def call_tool(ctx: Any, params: Any) -> Any:
        arguments = dict(params.arguments or {})
        text, failed = await run(backend.call, params.name, arguments)
        await announce(ctx)
        # the observation as the agent reads it (perturbed), also as structured content where it is a JSON object
        structured = None if failed else _object(text)
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)],
                                        structured_content=structured, is_error=failed)  # fmt: skip

    server = Server(name, version=version, instructions=instructions, on_list_tools=list_tools,
                    on_call_tool=call_tool, get_tool_input_schema=schema_of,
                    on_subscriptions_listen=ListenHandler(bus))  # fmt: skip
    # an older client learns from the handshake that the tool list may change (a 2026-07-28 one from the listen
    # handler); the SDK reads the options where it builds the handshake, so they are bound there
    server.create_initialization_options = functools.partial(  # type: ignore[method-assign]  # bound for the SDK's own call
        server.create_initialization_options, notification_options=NotificationOptions(tools_changed=True)
    )
    return server


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` on this process' stdin and stdout until the client closes them.

    Where both are pipes or sockets (how an MCP client starts a server) the SDK's ``stdio_server`` is given
    streams that read and write them on the event loop; its default streams go through anyio's file
    threads, a thread hop for each line read, each write and each flush, which on a busy machine cost a
    proxied call about a millisecond of wakeups (docs/mcp.md, Figures). Elsewhere (a terminal, a file) the
    SDK's defaults serve as they are.
    """
    from mcp.server.stdio import stdio_server

    async with _loop_stdio() as streams, stdio_server(*streams) as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _Lines:
    """Lines of an ``asyncio.StreamReader`` as text: what ``stdio_server`` iterates its stdin for."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """An ``asyncio.StreamWriter`` with the ``write``/``flush`` that ``stdio_server`` awaits on its stdout."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def _loop_stdio() -> Any:
    """``(stdin, stdout)`` for ``stdio_server``: streams on the event loop over private copies of fds 0 and 1,
    with fd 0 pointed at the null device and fd 1 at stderr meanwhile (as the SDK's own streams do, so stray
    output misses the wire); ``(None, None)``, the SDK's defaults, where the fds are not pipes or sockets."""
    import asyncio
    import os
    import stat

    def streamable(fd: int) -> bool:
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)

    if sys.platform == "win32" or not (streamable(0) and streamable(1)):
        yield None, None
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    saved_in, saved_out = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    os.dup2(2, 1)
    read_transport = write_transport = None
    try:
        # a line is one JSON-RPC message: no cap below what a tool result may reasonably be
        reader = asyncio.StreamReader(limit=2**28)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                         os.fdopen(wire_in, "rb", buffering=0))  # fmt: skip
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                  os.fdopen(wire_out, "wb", buffering=0))  # fmt: skip
        yield _Lines(reader), _Writer(asyncio.StreamWriter(write_transport, protocol, None, loop))
    finally:
        for transport in (write_transport, read_transport):
            if transport is not None:
                transport.close()
        for fd in (saved_in, saved_out):  # the loop made the pipes non-blocking; whoever reads them next expects not
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)
        os.dup2(saved_out, 1)
        os.dup2(saved_in, 0)
        os.close(saved_out)
        os.close(saved_in)


def http_app(server: Any, host: str = "127.0.0.1") -> Any:
    """``server`` as a Starlette app of streamable HTTP at ``/mcp``."""
    return server.streamable_http_app(host=host)


class HttpThread:
    """``server`` over streamable HTTP on a loopback port, served by uvicorn in a daemon thread.

    The socket is bound here and handed to uvicorn, so the port (a free one unless given) is this server's
    from the start: no other process can take it between choosing and listening.
    """

    def __init__(self, server: Any, host: str = "127.0.0.1", port: int | None = None, app: Any = None) -> None:
        """``app``: an ASGI app to serve instead of ``server``'s (``server`` is then ignored)."""
        import uvicorn

        self.host = host
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and without it every
        # response waits out a delayed ACK (about 40 ms a call on Linux)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.bind((host, port or 0))
        self.port = int(self._socket.getsockname()[1])
        served = app if app is not None else http_app(server, host)
        config = uvicorn.Config(served, host=host, port=self.port, log_level="warning", lifespan="on",
                                access_log=False)  # fmt: skip
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


def _name(spec: ToolSpec) -> str:
    return str(spec.get("function", spec)["name"])


def _object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object (what ``structuredContent`` must be), or ``None``."""
    if not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def observation_failed(text: str) -> bool:
    """Whether an observation the env rendered is an error (``{"error": ..., "message": ...}``)."""
    try:
        body = json.loads(text)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body and set(body) <= {"error", "message"}


__all__ = ["Backend", "EnvBackend", "HttpThread", "build_server", "http_app", "mcp_tool",
           "observation_failed", "serve_stdio"]  # fmt: skip
