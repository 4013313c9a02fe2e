"""One live connection to an MCP server, driven from synchronous code.

The sandbox's episode loop is synchronous and the SDK is async (anyio). Each :class:`Connection` owns an
event loop in a daemon thread for its whole life: the SDK's ``Client`` is entered and left inside one
task on that loop (its cancel scopes and the transport's task group demand one task), and each call is
submitted to the loop with :func:`asyncio.run_coroutine_threadsafe` and waited for with a timeout. So
any thread (a lockstep batch, the runner's worker threads) can call, the SDK's session stays on the
loop it was made on, and a server that hangs costs the caller a timeout, never a blocked session.

With ``loop="caller"`` no thread runs the loop: the thread that calls runs it (one caller at a time)
until its call is answered, and between calls it is still. That saves two thread wakeups a call (about a
millisecond of CPU on a busy 2-core machine, docs/mcp.md), which the proxy wants; the sandbox's episodes
keep the thread, which also answers whatever the server sends between calls.

Whatever goes wrong on the server's side (it exits, hangs, breaks the protocol or answers what the
SDK cannot read) becomes a :class:`ServerFault`, which the domain's tools turn into an error the agent
reads; no such fault escapes an episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import tempfile
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Literal

from sandbox.domains.mcp.target import ServerTarget
from sandbox.redact import redact
from sandbox.tools import DEFAULT_TIMEOUT, ErrorKind

CONNECT_TIMEOUT = 30.0
"""Seconds a server may take to start and answer the handshake (a stdio server imports the SDK first)."""
LoopMode = Literal["thread", "caller"]
"""Who runs a connection's event loop: a daemon thread of its own, or the thread that calls."""


class ServerFault(Exception):
    """The server failed a call: ``kind`` is the error kind the agent is shown. ``world``: the server itself
    failed (it exited, hung, lost its transport or would not start), so the episode is the world's, not the
    agent's (``sandbox.errors.WorldFailure``); otherwise it answered with an error the agent reads."""

    def __init__(self, kind: ErrorKind, message: str, world: bool = False) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.world = world


class Connection:
    """A started MCP client session to ``target``; :meth:`call` and :meth:`list_tools` block, with timeouts."""

    def __init__(self, target: ServerTarget, timeout: float = DEFAULT_TIMEOUT,
                 connect_timeout: float = CONNECT_TIMEOUT, loop: LoopMode = "thread") -> None:  # fmt: skip
        self.target = target
        self.timeout = timeout
        self.loop_mode: LoopMode = loop
        self.broken: str | None = None
        """Why the connection can serve no more calls (the server exited, the transport failed)."""
        self._client: Any = None
        # the server's stderr, kept for the message when it dies; closed in close()
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8") if target.kind == "stdio" else None  # noqa: SIM115
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._driving = threading.Lock()  # loop="caller": one thread runs the loop at a time
        if loop == "thread":
            self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp {target.label}", daemon=True)
            self._thread.start()
        self._stop: asyncio.Event | None = None
        self._held: asyncio.Future[None] | None = None
        try:
            self._submit(self._open(), connect_timeout)
        except BaseException as exc:
            self.close()
            if isinstance(exc, ServerFault):
                raise ServerFault(exc.kind, f"cannot start MCP server {target.label}: {exc.message}", True) from None
            raise

    # -- the loop's side ---------------------------------------------------------------------------

    def _transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.target.kind == "stdio":
            command, *args = self.target.command
            params = StdioServerParameters(command=command, args=args, env=self.target.env, cwd=self.target.cwd)
            assert self._stderr is not None  # made for a stdio target
            return stdio_client(params, errlog=self._stderr)
        if self.target.kind == "http":
            return self.target.url
        return self.target.build()

    async def _open(self) -> None:
        ready: asyncio.Future[None] = self._loop.create_future()
        self._stop = asyncio.Event()
        self._held = asyncio.ensure_future(self._hold(ready))
        await ready

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        try:
            async with Client(self._transport(), read_timeout_seconds=self.timeout, cache=None) as client:
                self._client = client
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as exc:  # the server exited or the transport failed: no more calls
            self.broken = self.broken or f"the connection closed ({_describe(exc)}){self._last_words()}"
            if not ready.done():
                ready.set_exception(ServerFault("fatal", self.broken))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            if self.broken is None:
                self.broken = "the connection was closed"

    def _submit(self, coro: Any, timeout: float) -> Any:
        if self._thread is None:
            return self._drive(coro, timeout)
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self._loop)
        try:
            return future.result(timeout + 5)  # the loop's own wait_for fires first; this guards a wedged loop
        except (FutureTimeout, TimeoutError):
            future.cancel()
            raise ServerFault("runtime_error", f"no answer within {timeout:g}s") from None

    def _drive(self, coro: Any, timeout: float) -> Any:
        """Run the loop in this thread until ``coro`` is done (``loop="caller"``); the caller may itself be a
        coroutine of another loop (the proxy's handler), which is set aside meanwhile, as asyncio allows one
        running loop a thread."""
        if not self._driving.acquire(timeout=timeout + 5):
            coro.close()
            raise ServerFault("runtime_error", f"no answer within {timeout:g}s (another call holds the connection)")
        outer = asyncio._get_running_loop()
        asyncio._set_running_loop(None)
        try:
            return self._loop.run_until_complete(asyncio.wait_for(coro, timeout))
        except TimeoutError:
            raise ServerFault("runtime_error", f"no answer within {timeout:g}s") from None
        finally:
            asyncio._set_running_loop(outer)
            self._driving.release()

    def _last_words(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            lines = [line.rstrip() for line in self._stderr.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f"; its last output: {' | '.join(lines[-3:])[-400:]}" if lines else ""

    # -- the caller's side -------------------------------------------------------------------------

    @property
    def server_info(self) -> tuple[str, str]:
        """The server's reported name and version (empty where it gives none)."""
        info = self._client.server_info if self._client is not None else None
        return (info.name, info.version or "") if info is not None else ("", "")

    def list_tools(self) -> list[Any]:
        """The server's tools (the SDK's ``Tool`` models), every page."""
        self._check()

        async def walk() -> list[Any]:
            tools: list[Any] = []
            cursor = None
            for _ in range(100):
                page = await self._client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools

        return self._guarded("listing its tools", walk(), self.timeout)

    def call(self, name: str, arguments: dict[str, Any], timeout: float | None = None) -> Any:
        """What the tool returned, as JSON data where it is JSON; a :class:`ServerFault` when it failed."""
        self._check()
        result = self._guarded(f"tool {name!r}", self._client.call_tool(name, arguments), timeout or self.timeout)
        return content_of(name, result)

    def _check(self) -> None:
        if self.broken is not None or self._client is None:
            message = f"the MCP server {self.target.label} is gone: {self.broken or 'not started'}"
            raise ServerFault("fatal", message, True)

    def _guarded(self, what: str, coro: Any, timeout: float) -> Any:
        from mcp import MCPError
        from pydantic import ValidationError

        try:
            return self._submit(coro, timeout)
        except ServerFault as fault:  # a server that hung once is not trusted again: the next episode restarts it
            self.broken = f"it did not answer {what}: {fault.message}"
            message = f"the MCP server {self.target.label} hangs: {what}: {fault.message}"
            raise ServerFault(fault.kind, message, True) from None
        except MCPError as exc:
            from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

            if exc.code == CONNECTION_CLOSED:
                self.broken = self.broken or f"the connection closed{self._last_words()}"
            if self.broken is not None:
                raise ServerFault("fatal", f"the MCP server {self.target.label} is gone: {self.broken}", True) from None
            if exc.code == REQUEST_TIMEOUT:
                self.broken = f"it did not answer {what} within {timeout:g}s"
                message = f"the MCP server {self.target.label} hangs: {self.broken}"
                raise ServerFault("runtime_error", message, True) from None
            raise ServerFault("runtime_error", f"the MCP server refused {what}: {exc}") from None
        except ValidationError as exc:
            message = f"the MCP server answered {what} with garbage: {_describe(exc)}"
            raise ServerFault("runtime_error", message) from None
        except Exception as exc:  # the transport broke under the call
            self.broken = self.broken or f"{_describe(exc)}{self._last_words()}"
            message = f"the MCP server {self.target.label} failed on {what}: {self.broken}"
            raise ServerFault("fatal", message, True) from None

    def close(self) -> None:
        """End the session (a stdio server's process with it) and the loop's thread; safe to call twice."""
        if self._thread is None:
            self._close_driven()
        elif not self._loop.is_closed() and self._loop.is_running():
            if self._stop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)
            if self._held is not None:
                held = self._held
                # a transport that will not close in time: the daemon thread goes with the process
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(_settle(held), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        thread_done = self._thread is None or not self._thread.is_alive()
        if thread_done and not self._loop.is_closed() and not self._loop.is_running():
            self._loop.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self.broken = self.broken or "closed"

    def _close_driven(self) -> None:
        if self._loop.is_closed() or self._loop.is_running():  # closed, or closing from inside a call of its own
            return
        if self._stop is not None:
            self._stop.set()
        if self._held is not None and not self._held.done():
            # a transport that will not close in time is left to the process' exit
            with contextlib.suppress(BaseException):
                self._drive(_settle(self._held), 9)


async def _settle(task: asyncio.Future[None]) -> None:
    try:
        await asyncio.wait_for(asyncio.shield(task), 8)
    except BaseException:
        task.cancel()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = redact(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


_NOT_FOUND = re.compile(
    r"not found|no such|does not exist|doesn't exist|unknown \w+ ['\"]|\bno \w+ (named |called |with )?['\"]"
)
"""Words of a failed call that say it is about something that is not there (``no note 'n9'``): ``not_found``."""
_HIDDEN = re.compile(r"(?:Error executing tool \S+\s*)+")
"""The SDK's words for a tool that crashed (``Error executing tool NAME``, nested ones repeated): the cause is
hidden from the client, so nothing tells the agent what to change, and the same call fails again."""
_ARGUMENTS = re.compile(r"^Error executing tool \S+: \d+ validation errors? for ")
"""The SDK's words for arguments its own schema check refused."""
_UNKNOWN = re.compile(r"^Unknown tool: \S+$")


def error_kind(words: str) -> ErrorKind:
    """The error kind of a call the server failed with ``words``: a crash whose cause the SDK hides is ``fatal``
    (sending it again cannot help), arguments the SDK refused ``invalid_arguments``, a name it does not know
    ``unknown_tool``, something that is not there ``not_found``; anything else ``runtime_error``."""
    if _HIDDEN.fullmatch(words):
        return "fatal"
    if _ARGUMENTS.match(words):
        return "invalid_arguments"
    if _UNKNOWN.match(words):
        return "unknown_tool"
    return "not_found" if _NOT_FOUND.search(words.lower()) else "runtime_error"


def content_of(name: str, result: Any) -> Any:
    """A ``CallToolResult`` as the data a tool returns: its structured content, else its text (parsed where it
    is JSON; a list sent as one JSON block per row, as the SDK sends a list without an output schema, as the
    list of rows; no block at all as an empty list); a result marked as an error raises :class:`ServerFault`
    with the server's words."""
    texts = [getattr(block, "text", None) for block in result.content]
    words = " ".join(t for t in texts if isinstance(t, str)).strip()
    if result.is_error:
        raise ServerFault(error_kind(words), words or f"{name} failed")
    if result.structured_content is not None:
        return result.structured_content
    if not result.content:
        return []
    kinds = [getattr(block, "type", "?") for block in result.content]
    strings = [t for t in texts if isinstance(t, str)]
    if len(strings) == len(texts):
        rows = [_json(t) for t in strings]
        if len(rows) == 1:
            return rows[0]
        return rows if all(r is not t for r, t in zip(rows, texts, strict=True)) else texts  # rows, or texts
    return {"content": kinds, "text": words} if words else {"content": kinds}


def _json(text: str) -> Any:
    """``text`` as JSON data; the very object ``text`` where it is not JSON (or is too deep to read)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


__all__ = ["CONNECT_TIMEOUT", "DEFAULT_TIMEOUT", "Connection", "LoopMode", "ServerFault", "content_of", "error_kind"]
