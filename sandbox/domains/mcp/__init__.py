"""MCP servers as tool worlds: an MCP server's tools as a domain (served perturbed by :mod:`sandbox.proxy`).

Needs the ``mcp`` extra (``pip install 'pytest-openagent[mcp]'``). Importing this package imports no
MCP library; :func:`mcp_domain` and :func:`load` do. See docs/mcp.md.

The domain named ``mcp`` (``--openagent-mcp``, ``openagent eval --mcp``) is built on first request by
:func:`load` from the server, tasks and settings (``reset``, ``inspect``, ``roles``) that :func:`configure`
set, or from the ``OPENAGENT_MCP``, ``OPENAGENT_MCP_TASKS`` and ``OPENAGENT_MCP_SETTINGS`` environment
variables (so pytest-xdist workers and subprocesses find it too).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.domains.mcp.settings import McpSettings, inspect_value, parse_settings, reset_value
from sandbox.domains.mcp.target import EXAMPLES, ServerTarget, parse_target
from sandbox.errors import UsageError

if TYPE_CHECKING:
    from sandbox.domains.mcp.domain import McpDomain

ENV_SERVER = "OPENAGENT_MCP"
ENV_TASKS = "OPENAGENT_MCP_TASKS"
ENV_SETTINGS = "OPENAGENT_MCP_SETTINGS"
NAME = "mcp"
"""The registered name of the configured server's domain."""
INSTALL = "pip install 'pytest-openagent[mcp]'"


class SdkMissing(UsageError, ImportError):
    """The ``mcp`` extra is not installed: misuse (exit 2 in ``openagent``) that says how to install it."""


def require_sdk() -> None:
    """A :class:`SdkMissing` that says how to install, when the SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise SdkMissing(f"MCP servers need the mcp SDK ({exc.name} is missing): {INSTALL}") from exc


def mcp_domain(server: Any, tasks: Any = None, **options: Any) -> McpDomain:
    """A domain over an MCP server; see :func:`sandbox.domains.mcp.domain.mcp_domain` for the options."""
    require_sdk()
    from sandbox.domains.mcp.domain import mcp_domain as build

    return build(server, tasks, **options)


def configure(server: str, tasks: str | Path | None = None, settings: McpSettings | None = None) -> McpSettings:
    """Name the server (its tasks file, how it is run) that the ``mcp`` domain is built from, checked now,
    connected later. Returns the settings in force: ``settings`` where given, the tasks file's header elsewhere."""
    parse_target(server)
    if tasks is not None and not Path(tasks).is_file():
        raise UsageError(f"MCP tasks file {str(tasks)!r} does not exist; give a JSONL file of tasks (docs/mcp.md)")
    tasks_path = None if tasks is None else str(Path(tasks).resolve())
    settings = settings or McpSettings()
    in_force = settings.over(tasks_settings(tasks_path)) if tasks_path else settings
    # a hook named module:function is imported now: a typo is misuse before anything runs
    reset_value(in_force.reset)
    inspect_value(in_force.inspect)
    held_as = (os.environ.get(ENV_SERVER), os.environ.get(ENV_TASKS), os.environ.get(ENV_SETTINGS))
    if held_as != (server, tasks_path, settings.to_json()):
        from sandbox.domains import DOMAINS

        held = DOMAINS.pop(NAME, None)  # built from another server: the next request builds this one's
        close = getattr(held, "close", None)  # an McpDomain's, closing its server
        if callable(close):
            close()
    os.environ[ENV_SERVER] = server
    os.environ[ENV_SETTINGS] = settings.to_json()
    if tasks_path is None:
        os.environ.pop(ENV_TASKS, None)
    else:
        os.environ[ENV_TASKS] = tasks_path
    return in_force


def tasks_settings(tasks: str | Path) -> McpSettings:
    """The settings a tasks file's header gives (none without a header)."""
    from sandbox.define import load_header

    where, raw = load_header(tasks)
    return McpSettings() if raw is None else parse_settings(raw, where)


def load() -> McpDomain:
    """The ``mcp`` domain over the configured server."""
    server = os.environ.get(ENV_SERVER)
    if not server:
        raise UsageError(f"the mcp domain needs a server: --openagent-mcp SERVER or openagent eval --mcp SERVER, "
                         f"written as {EXAMPLES}")  # fmt: skip
    settings = McpSettings.from_json(os.environ.get(ENV_SETTINGS))
    return mcp_domain(server, os.environ.get(ENV_TASKS) or None, name=NAME, reset=reset_value(settings.reset),
                      inspect=inspect_value(settings.inspect), roles=settings.roles or None,
                      hide=settings.hide)  # fmt: skip


__all__ = ["ENV_SERVER", "ENV_SETTINGS", "ENV_TASKS", "EXAMPLES", "NAME", "McpSettings", "SdkMissing", "ServerTarget",
           "configure", "load", "mcp_domain", "parse_target", "require_sdk", "tasks_settings"]  # fmt: skip
