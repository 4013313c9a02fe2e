"""Where an MCP server is: a command to start over stdio, a streamable-HTTP URL, or a Python server object.

Read from text without importing the SDK, so that options and the CLI check a server's address before
anything connects::

    stdio:python -m my_server      a subprocess, spoken to over its stdin and stdout
    http://127.0.0.1:8000/mcp      a running server, over streamable HTTP (https too)
    my_package.server:app          an SDK server object (``MCPServer`` or ``Server``), in memory;
                                   or a function of no arguments that builds one (a fresh one per start)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from sandbox.errors import UsageError

Kind = Literal["stdio", "http", "memory"]
EXAMPLES = "'stdio:python -m my_server', 'http://127.0.0.1:8000/mcp' or 'my_package.server:app'"
_ATTRIBUTE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass(frozen=True)
class ServerTarget:
    """An MCP server's address: ``command`` (stdio), ``url`` (http) or ``server`` (memory: an object, or a
    function of no arguments that builds one)."""

    kind: Kind
    command: tuple[str, ...] = ()
    url: str = ""
    server: Any = field(default=None, compare=False)
    text: str = ""
    """How the user wrote it (what a report shows); for an object passed directly, its type."""
    env: dict[str, str] | None = field(default=None, compare=False)
    cwd: str | None = None

    @property
    def label(self) -> str:
        return self.text or self.kind

    def build(self) -> Any:
        """The in-memory server object: the object given, or what its factory returns."""
        obj = self.server
        if isinstance(obj, str):
            from sandbox.importing import import_attribute

            try:
                obj = import_attribute(obj, f"MCP server {obj!r}")
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        if callable(obj) and not is_server(obj):
            obj = obj()
        if not is_server(obj):
            raise UsageError(
                f"MCP server {self.label}: a {type(obj).__name__} is no MCP server; give an mcp MCPServer or "
                f"Server object (or a function that returns one), or write it as {EXAMPLES}"
            )
        return obj


def is_server(obj: Any) -> bool:
    """Whether ``obj`` is an SDK server object (``MCPServer`` or the low-level ``Server``)."""
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(obj, (MCPServer, Server))


def parse_target(spec: str | ServerTarget | Any, *, env: dict[str, str] | None = None,
                 cwd: str | None = None) -> ServerTarget:  # fmt: skip
    """``spec`` as a :class:`ServerTarget`; a :class:`~sandbox.errors.UsageError` that shows the forms it takes."""
    if isinstance(spec, ServerTarget):
        return spec
    if not isinstance(spec, str):
        if callable(spec) or spec is not None:
            return ServerTarget("memory", server=spec, text=type(spec).__name__)
        raise UsageError(f"no MCP server given; write one as {EXAMPLES}")
    text = spec.strip()
    if text.startswith("stdio:"):
        try:
            command = tuple(shlex.split(text.removeprefix("stdio:")))
        except ValueError as exc:
            raise UsageError(f"MCP server {text!r}: the command does not parse ({exc})") from None
        if not command:
            raise UsageError(f"MCP server {text!r}: 'stdio:' needs a command after it, e.g. 'stdio:python -m server'")
        return ServerTarget("stdio", command=command, text=text, env=env, cwd=cwd)
    if text.startswith(("http://", "https://")):
        if not re.fullmatch(r"https?://[^/\s:]+(:\d+)?(/\S*)?", text):
            raise UsageError(f"MCP server {text!r} is no URL; write it as 'http://HOST:PORT/mcp'")
        return ServerTarget("http", url=text, text=text)
    if _ATTRIBUTE.fullmatch(text):
        return ServerTarget("memory", server=text, text=text)
    raise UsageError(f"MCP server {text!r}: not a server address; write it as {EXAMPLES}")


__all__ = ["EXAMPLES", "Kind", "ServerTarget", "is_server", "parse_target"]
