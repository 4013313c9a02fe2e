"""``openagent mcp-proxy``: an MCP server's tools served perturbed."""

from __future__ import annotations

import argparse

from pytest_openagent.console import at_least, port, seconds
from sandbox.errors import UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--upstream", required=True, metavar="SERVER",
        help="the MCP server to perturb: 'stdio:COMMAND', 'http://HOST:PORT/mcp' or module:attribute",
    )  # fmt: skip
    p.add_argument(
        "--perturb", action="append", default=[], metavar="NAME[:SEVERITY][@ONSET]",
        help="a perturbation to apply (repeat, or join with commas); severity 1 unless given; @K starts it after "
        "the K-th call, and the proxy sends notifications/tools/list_changed where the tool list changes",
    )  # fmt: skip
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of the perturbations (default 0)")
    p.add_argument("--pool", choices=("eval", "train"), default="eval", help="the perturbations' texts (default eval)")
    p.add_argument("--tasks", default=None, metavar="FILE", help="tasks of the upstream (JSONL or YAML)")
    p.add_argument("--task", default=None, metavar="ID", help="the task to serve (needed when the file has several)")
    p.add_argument("--case", default=None, metavar="FILE", help="a case JSON (task and perturbations) to serve as is")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="how to serve (default stdio)")
    p.add_argument("--host", default="127.0.0.1", help="http: the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port, default=8765, help="http: the port to listen on (default 8765)")
    p.add_argument("--timeout", type=seconds, default=10.0, help="seconds an upstream call may take (default 10)")
    p.add_argument(
        "--snapshot", default=None, metavar="FILE",
        help="write the upstream's tools/list (its release, unperturbed) to FILE as JSON and exit, for "
        "`openagent diff-test OLD.json NEW.json`",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from sandbox.domains.mcp import require_sdk

    require_sdk()
    from sandbox.proxy.serve import run_proxy, write_snapshot

    if args.snapshot is not None:
        if args.perturb or args.case:
            raise UsageError("--snapshot records the upstream as it is: drop --perturb and --case")
        return write_snapshot(args.upstream, args.snapshot, timeout=args.timeout)

    return run_proxy(
        args.upstream, args.perturb, seed=args.seed, pool=args.pool, tasks=args.tasks, task=args.task,
        case_file=args.case, transport=args.transport, host=args.host, port=args.port, timeout=args.timeout,
    )  # fmt: skip
