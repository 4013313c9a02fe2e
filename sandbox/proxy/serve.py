"""``openagent mcp-proxy``: an upstream MCP server served perturbed, over stdio or streamable HTTP.

The proxy serves one case: a task of the upstream's domain (or, without tasks, a task that only serves the
tools) under a stack of perturbations, built from ``--perturb NAME[:SEVERITY][@ONSET]`` or read from a case file
(``Case.to_dict``, as a report records it), so a failure found through the proxy replays exactly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox.case import Case
from sandbox.errors import UsageError, did_you_mean
from sandbox.perturbations.base import Perturbation, Pool


def parse_perturbations(items: Sequence[str], seed: int = 0, pool: Pool = "eval") -> tuple[Perturbation, ...]:
    """``["semantic_renaming:2", "runtime_error", "tool_name_noise:1@2"]`` (or one comma-joined string) as specs;
    severity 1 by default; ``@K`` is an onset (drift: it starts after the K-th call)."""
    from pydantic import ValidationError

    from sandbox.perturbations import registry

    specs = []
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        head, _, after = item.partition("@")
        name, _, severity = head.partition(":")
        if severity and not severity.strip().isdigit():
            raise UsageError(f"--perturb {item!r}: the severity after ':' is a whole number, e.g. {name}:2")
        if after and not after.strip().isdigit():
            raise UsageError(f"--perturb {item!r}: the onset after '@' is a whole number of calls, e.g. {head}@1")
        cls = registry.get(name.strip())
        level = int(severity) if severity else cls.severity_floor()
        try:
            specs.append(cls(severity=level, seed=seed, pool=pool, after=int(after) if after else 0))
        except ValidationError as exc:
            raise UsageError(f"--perturb {item!r}: {exc.errors()[0]['msg']}") from None
    return tuple(specs)


def proxy_case(domain: Any, perturbations: Sequence[Perturbation], task_id: str | None = None,
               case_file: str | Path | None = None) -> Case:  # fmt: skip
    """The case the proxy serves: from ``case_file``, or the task ``task_id`` (the only task, if there is one)
    of ``domain`` under ``perturbations``; each perturbation must change it."""
    if case_file is not None:
        try:
            data = json.loads(Path(case_file).read_text(encoding="utf-8"))
            case = Case.from_dict(data.get("case", data))
        except (OSError, ValueError, KeyError) as exc:
            raise UsageError(f"--case {case_file}: not a case file ({exc}); write one with Case.to_dict()") from None
        if perturbations:
            raise UsageError("--case holds its own perturbations; drop --perturb, or drop --case")
        return case
    tasks = list(domain.listed)
    if task_id is None:
        if len(tasks) > 1:
            ids = ", ".join(t.id for t in tasks)
            raise UsageError(f"the tasks file has {len(tasks)} tasks; pick the one to serve with --task ID ({ids})")
        task = tasks[0]
    else:
        found = [t for t in tasks if t.id in (task_id, f"{domain.name}-{task_id}")]
        if not found:
            raise UsageError(did_you_mean("task", task_id, [t.id.removeprefix(f"{domain.name}-") for t in tasks]))
        task = found[0]
    for p in perturbations:
        if not p.applies_to(task):
            why = f" ({type(p).limits})" if type(p).limits else ""
            hint = "" if task.plan else "; give --tasks FILE and --task ID: a task whose gold plan calls tools"
            raise UsageError(f"perturbation {p.name} does not change task {task.id}{why}{hint}")
    return Case(task, tuple(perturbations))


def run_proxy(upstream: str, perturb: Sequence[str], *, seed: int = 0, pool: Pool = "eval", tasks: str | None = None,
              task: str | None = None, case_file: str | None = None, transport: str = "stdio",
              host: str = "127.0.0.1", port: int = 8765, timeout: float = 10.0) -> int:  # fmt: skip
    """Build the case and serve it until the client goes (stdio) or the process is stopped (http)."""
    import anyio

    from sandbox.domains import register_domain
    from sandbox.domains.mcp import mcp_domain, parse_target
    from sandbox.proxy.server import EnvBackend, build_server, http_app, serve_stdio

    parse_target(upstream)
    if tasks is not None and not Path(tasks).is_file():
        raise UsageError(f"--tasks {tasks!r}: no such file; give a JSONL file of tasks (docs/mcp.md)")
    specs = parse_perturbations(perturb, seed, pool)
    name = "mcp"
    if case_file is not None and Path(case_file).is_file():
        try:
            recorded = json.loads(Path(case_file).read_text(encoding="utf-8"))
            name = recorded.get("case", recorded)["task"]["domain"]
        except (ValueError, KeyError, TypeError):
            pass  # proxy_case says what is wrong with the file
    # the proxy calls its upstream from one thread at a time: that thread runs the connection's loop (no hop)
    upstream_domain = mcp_domain(upstream, tasks, name=name, timeout=timeout, loop="caller")
    domain = register_domain(upstream_domain, replace=True)
    case = proxy_case(domain, specs, task, case_file)
    backend = EnvBackend(case.env())
    label = case.describe()
    server_name, server_version = upstream_domain.server_name, upstream_domain.server_version
    server = build_server(backend, f"openagent-proxy:{server_name or 'mcp'}", server_version,
                          instructions=backend.query, inline=transport == "stdio")  # fmt: skip
    print(f"openagent mcp-proxy: {label}", file=sys.stderr, flush=True)
    if transport == "stdio":
        anyio.run(serve_stdio, server)
        return 0
    import uvicorn

    print(f"openagent mcp-proxy: serving on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(http_app(server, host), host=host, port=port, log_level="warning")
    return 0


def write_snapshot(upstream: str, path: str | Path, timeout: float = 10.0) -> int:
    """Write ``upstream``'s ``tools/list`` result (the tools an agent sees, as the server lists them) to ``path``."""
    from sandbox.domains.mcp import mcp_domain, parse_target
    from sandbox.files import check_output_file, write_atomically

    parse_target(upstream)
    check_output_file(Path(path), "the snapshot")
    domain = mcp_domain(upstream, None, timeout=timeout, loop="caller")
    try:
        data = {"tools": list(domain.listing)}
    finally:
        domain.close()
    write_atomically(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n")
    label = f"{domain.server_name or 'server'} {domain.server_version}".strip()
    print(f"openagent mcp-proxy: {len(data['tools'])} tools of {label} written to {path}", file=sys.stderr)
    return 0


__all__ = ["parse_perturbations", "proxy_case", "run_proxy", "write_snapshot"]
