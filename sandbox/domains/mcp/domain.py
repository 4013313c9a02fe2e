"""An MCP server's tools as a domain: :func:`mcp_domain`.

The server's tool list becomes :class:`~sandbox.tools.Tool` objects (``Tool.from_spec``: the agent sees
each tool's own input schema and description); a call goes to the server and its result comes back as
data, a failure as an error the agent reads. Tasks are the user's (:class:`~sandbox.define.UserTask`,
or a JSONL/YAML file of them), their gold plans replayed against the server when the domain is built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from sandbox.define import UserTask, define_domain, load_header, load_tasks
from sandbox.domain import Domain
from sandbox.domains.mcp.connection import DEFAULT_TIMEOUT, Connection, LoopMode, ServerFault
from sandbox.domains.mcp.link import McpState, Reset, ServerLink, check_reset
from sandbox.domains.mcp.settings import McpSettings, inspect_value, parse_settings, reset_value
from sandbox.domains.mcp.target import ServerTarget, is_server, parse_target
from sandbox.domains.mcp.verify import plans, verify_reset
from sandbox.errors import OpenAgentWarning, UsageError, WorldFailure
from sandbox.task import Task
from sandbox.tools import Role, Tool, ToolFailure, check_tool_name

READING = 2
"""The version of how results and failures are read (``content_of``, ``error_kind``), in the domain's version:
episodes cached under an older reading are not served."""
SERVE_ONLY = UserTask("Use the tools to do what is asked.", id="serve")
"""The one task of a domain built without tasks: enough to serve the server's tools (the proxy), not to judge."""


@dataclasses.dataclass(frozen=True, eq=False)
class McpDomain(Domain):
    """A :class:`~sandbox.domain.Domain` whose tools are an MCP server's; ``link`` holds the server."""

    link: ServerLink | None = None
    server_name: str = ""
    server_version: str = ""
    tools_digest: str = ""
    """A hash of the server's tool list as it reported it (names, descriptions, schemas, annotations)."""
    annotations: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """The server's tool annotations (``readOnlyHint``...) by tool name, as it reported them: the proxy lists them."""
    listing: tuple[dict[str, Any], ...] = ()
    """The server's ``tools/list`` as it reported it (the tools the agent sees), for a snapshot of its release."""

    def version(self) -> str:
        """The server's reported name and version and a hash of its tool list, beside the digest of the
        tasks' code: a changed server is never served the old episodes."""
        return f"{super().version()}+mcp{READING}:{self.server_name}@{self.server_version}:{self.tools_digest}"

    def close(self) -> None:
        """Stop the shared server connection (episodes with their own servers close theirs)."""
        if self.link is not None:
            self.link.close()

    def __repr__(self) -> str:
        return f"McpDomain({self.name!r}, {self.link.target.label if self.link else '?'}, {len(self.tools)} tools)"


def mcp_domain(
    server: str | ServerTarget | Any,
    tasks: Iterable[UserTask | Task] | str | Path | None = None,
    *,
    name: str | None = None,
    reset: Reset | str = "auto",
    inspect: Callable[[Callable[[str, dict[str, Any]], Any]], Any] | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    roles: dict[str, Role] | None = None,
    loop: LoopMode = "thread",
    hide: Iterable[str] = (),
) -> McpDomain:
    """A domain over the MCP server ``server``: ``"stdio:COMMAND"``, ``"http://HOST:PORT/mcp"``, an SDK server
    object (or a function that builds one), or ``"module:attribute"`` naming one.

    ``tasks``: the user's tasks (or a JSONL/YAML file); none gives a domain that only serves the tools.
    ``reset`` keeps episodes apart: ``"restart"`` (a fresh server per episode), ``"tool:NAME"`` (a reset tool
    the server offers, hidden from the agent), a function ``reset(connection)`` (or ``"module:function"``
    naming one), or ``None`` (``"none"``: the writes do not matter); ``"auto"`` uses a tool named ``reset``
    where the server has one, else restarts a stdio command or a server factory, else refuses a server whose
    tools may write. Before the gold plans are replayed, the reset is verified
    (:mod:`sandbox.domains.mcp.verify`): a reset that does not restore the server is misuse. A tasks
    file's header may give ``reset``, ``inspect`` and ``roles`` (:mod:`sandbox.domains.mcp.settings`); the
    arguments here win. ``inspect`` reads the server's state for end
    states (``"tool:NAME"``, or ``inspect(call) -> data`` with ``call(name, args)``): a plan that changes
    it gives its task an expected end state. ``timeout``: seconds a call may take before it fails as a
    hung server. ``roles`` declares tools' roles (``lookup``, ``write``, ``wait``) by name; a tool the
    server marks read-only is a lookup. ``loop``: who runs a connection's event loop, a thread of its own
    (``"thread"``) or the thread that calls (``"caller"``: no thread hop, for one caller at a time; the proxy).
    ``hide``: tools the agent does not see (a harness's own, such as a call log) and optional arguments it
    does not see (``"tool.argument"``, ``"*.argument"`` for every tool: a harness's namespace key).
    """
    target = parse_target(server)
    reset = reset_value(reset) if isinstance(reset, str) else reset
    inspect = inspect_value(inspect) if isinstance(inspect, str) else inspect
    if isinstance(tasks, (str, Path)):
        where, raw = load_header(tasks)
        header = McpSettings() if raw is None else parse_settings(raw, where)
        reset = reset_value(header.reset) if reset == "auto" and header.reset is not None else reset
        inspect = inspect if inspect is not None else inspect_value(header.inspect)
        roles = {**header.roles, **(roles or {})}  # type: ignore[dict-item]  # roles are checked where the header is parsed
        hide = (*header.hide, *hide)
        tasks = load_tasks(tasks)
    specs = list(_tasks(tasks))
    probe = ServerLink(target, None, timeout, loop=loop)
    try:
        probed = probe.connect()
    except ServerFault as fault:
        raise UsageError(f"{fault.message}; check that {target.label} starts an MCP server") from None
    connection: Connection | None = probed  # closed below unless the link adopts it
    try:
        listed = probed.list_tools()
        server_name, server_version = probed.server_info
        reset_call = _choose_reset(reset, target, [t.name for t in listed])
        link = ServerLink(target, check_reset(reset_call, target), timeout, inspect, loop)
        if not link.isolated:
            link.adopt(probed)  # the probe's session serves the episodes
            connection = None
    except ServerFault as fault:
        raise UsageError(f"MCP server {target.label}: {fault.message}") from None
    finally:
        if connection is not None:
            connection.close()
    hidden_tools = {h for h in hide if "." not in h}
    hidden = hidden_tools | ({link.reset_tool} if link.reset_tool else set())
    try:
        missing = sorted(hidden_tools - {t.name for t in listed})
        if missing:
            raise UsageError(f"hide names {', '.join(map(repr, missing))}, which it does not list; "
                             f"its tools: {', '.join(t.name for t in listed)}")  # fmt: skip
        for t in listed:
            if t.name not in hidden:
                check_tool_name(t.name, fix="the server must rename the tool")
        if link.reset_tool and link.reset_tool not in {t.name for t in listed}:
            raise UsageError(f"reset={reset!r}, but it has no tool {link.reset_tool!r}; "
                             f"its tools: {', '.join(t.name for t in listed)}")  # fmt: skip
        reader = inspect.removeprefix("tool:") if isinstance(inspect, str) else None
        if reader is not None and reader not in {t.name for t in listed}:
            raise UsageError(f"inspect={inspect!r}, but it has no tool {reader!r}; "
                             f"its tools: {', '.join(t.name for t in listed)}")  # fmt: skip
        arguments = [h.partition(".")[::2] for h in hide if "." in h]
        tools = [_tool(t, roles or {}, arguments) for t in listed if t.name not in hidden]
        if reset == "auto" and link.reset is None and tasks is not None:  # without tasks: the proxy's one episode
            _refuse_unreset(tools)
        # before the gold replay below, the first calls that may change the server
        chosen = plans(specs, tools)
        if link.reset is None and chosen and tasks is not None:
            warnings.warn(
                f"MCP server {target.label}: reset none, and the gold plans of {len(chosen)} task(s) call tools that "
                f"may change its state ({', '.join(sorted({n for _, calls in chosen for n, _ in calls}))}): episodes "
                "see each other's writes and the replay check is skipped; give a reset unless the writes do not "
                "matter",
                OpenAgentWarning,
                stacklevel=2,
            )
        verify_reset(link, chosen)
        unknown = sorted(t.name for t in tools if not t.role_known)
        if unknown and tasks is not None:
            warnings.warn(
                f"MCP server {target.label}: {', '.join(unknown)} declare no role (no readOnlyHint, no roles given), "
                "so a write repeated by an agent through them is not caught (no repeated_write); declare them with "
                '--mcp-roles / --openagent-mcp-roles / "roles" in the tasks file\'s header, e.g. '
                f'{{"{unknown[0]}": "lookup"}} (or "write")',
                OpenAgentWarning,
                stacklevel=2,
            )
    except UsageError as exc:
        link.close()
        raise type(exc)(f"MCP server {target.label}: {exc}") from None
    domain_name = name or _name(server_name)
    try:
        base = define_domain(domain_name, tools, state=lambda seed: McpState(link), tasks=specs)
    except BaseException:  # the gold replay failed (a server that hangs): no process of it outlives the error
        link.close()
        raise
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Domain)}
    annotations = {t.name: t.annotations.model_dump(by_alias=True, exclude_none=True) for t in listed
                   if getattr(t, "annotations", None) is not None and t.name not in hidden}  # fmt: skip
    listing = tuple(t.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}) for t in listed
                    if t.name not in hidden)  # fmt: skip
    return McpDomain(**fields, link=link, server_name=server_name, server_version=server_version,
                     tools_digest=tools_digest(listed), annotations=annotations, listing=listing)  # fmt: skip


def _choose_reset(reset: Reset | str, target: ServerTarget, names: list[str]) -> Reset:
    if reset != "auto":
        return reset
    if "reset" in names:
        return "tool:reset"
    factory = target.kind == "memory" and callable(target.server) and not is_server(target.server)
    return "restart" if target.kind == "stdio" or factory else None


def _refuse_unreset(tools: list[Tool]) -> None:
    """A server with no reset whose tools may write: episodes would see each other's writes (and the gold replay's)."""
    unsure = [t.name for t in tools if not (t.role_known and t.role == "lookup")]
    if not unsure:
        return
    named = [t.name for t in tools if "reset" in t.name.lower()]
    hint = f" (it has {', '.join(repr(n) for n in named)}: reset='tool:{named[0]}'?)" if named else ""
    raise UsageError(
        f"{', '.join(unsure)} may change the server's state (a write, or a tool whose role nobody declared), and "
        f"nothing resets it between episodes: give a reset, 'tool:NAME' (a reset tool it offers){hint}, "
        "'module:function' (a hook reset(connection)) or 'restart' (a command or a server factory), or declare the "
        "lookups' roles, or 'none' if the writes do not matter. Where: --mcp-reset RESET and --mcp-roles JSON "
        "(openagent eval, check-domain, mcp-proxy), --openagent-mcp-reset and --openagent-mcp-roles (pytest), "
        'mcp-reset and mcp-roles in [tool.openagent], "reset" and "roles" in the tasks file\'s header '
        '({"openagent": {"reset": ...}} on its first line), or reset= and roles= in Python (docs/mcp.md)'
    )


def _tasks(tasks: Iterable[UserTask | Task] | str | Path | None) -> Any:
    if tasks is None:
        return [SERVE_ONLY]
    return tasks


def _name(server_name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in server_name).strip("-")
    return f"mcp-{cleaned}" if cleaned else "mcp"


def tools_digest(listed: list[Any]) -> str:
    rows = [t.model_dump(mode="json", exclude_none=True, exclude={"meta"}) for t in listed]
    text = json.dumps(sorted(rows, key=lambda r: r.get("name", "")), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _schema(tool: Any, hide: Sequence[tuple[str, str]]) -> dict[str, Any]:
    schema = dict(tool.input_schema or {})
    hidden = {argument for name, argument in hide if name in ("*", tool.name)}
    required = set(schema.get("required") or ())
    if hidden & required:
        raise UsageError(f"hide: {tool.name}'s argument {sorted(hidden & required)[0]!r} is required, and only "
                         "an optional argument can be left out of the calls")  # fmt: skip
    if hidden:
        schema["properties"] = {k: v for k, v in (schema.get("properties") or {}).items() if k not in hidden}
    schema.pop("title", None)
    schema.setdefault("type", "object")
    schema["properties"] = {
        k: {key: v for key, v in prop.items() if key != "title"} if isinstance(prop, dict) else prop
        for k, prop in (schema.get("properties") or {}).items()
    }
    schema.setdefault("required", [])
    return schema


def _tool(tool: Any, roles: dict[str, Role], hide: Sequence[tuple[str, str]] = ()) -> Tool:
    name = tool.name
    spec = {"type": "function", "function": {"name": name, "description": tool.description or "",
                                             "parameters": _schema(tool, hide)}}  # fmt: skip

    def handler(state: McpState, /, **arguments: Any) -> Any:  # a tool may take an argument named state
        try:
            return state.send(name, arguments)
        except ServerFault as fault:
            if fault.world:  # the server failed, not the agent: the episode ends as world_error
                raise WorldFailure(fault.message) from None
            raise ToolFailure(fault.kind, fault.message) from None

    role, idempotent = annotated_role(getattr(tool, "annotations", None))
    # the connection keeps its own deadline
    return Tool.from_spec(spec, handler, role=roles.get(name, role), idempotent=idempotent, timeout=None)


def annotated_role(annotations: Any) -> tuple[Role | None, bool]:
    """The role an MCP tool's annotations give (``None``: they say nothing), and whether it is an idempotent
    write. ``readOnlyHint`` says lookup or write; ``destructiveHint`` and ``idempotentHint`` describe only
    writes, so either given alone says write."""
    if annotations is None:
        return None, False
    read_only = getattr(annotations, "readOnlyHint", getattr(annotations, "read_only_hint", None))
    destructive = getattr(annotations, "destructiveHint", getattr(annotations, "destructive_hint", None))
    idempotent = getattr(annotations, "idempotentHint", getattr(annotations, "idempotent_hint", None))
    if read_only is True:
        return "lookup", False
    if read_only is False or destructive is not None or idempotent is not None:
        return "write", idempotent is True
    return None, False


__all__ = ["SERVE_ONLY", "McpDomain", "mcp_domain", "tools_digest"]
