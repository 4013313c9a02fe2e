"""``openagent check-domain``: the oracle and the static baseline over every case of a world."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_openagent.arguments import (
    EXIT_AGENT_FAILED,
    EXIT_GATE_FAILED,
    EXIT_OK,
    MCP_PREFIXES,
    add_episode_options,
    add_mcp_options,
    add_selection_options,
    check_cache,
    configure_mcp,
    selection,
)
from pytest_openagent.console import at_least, say
from sandbox.errors import UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "spec", metavar="SPEC",
        help="the world to check: a registered or entry-point domain's name, module:attribute naming a sandbox.Domain, "
        "or an MCP server ('stdio:COMMAND', 'http://HOST:PORT/mcp', or module:attribute naming an SDK server object "
        "when --tasks is given)",
    )  # fmt: skip
    add_mcp_options(p)
    add_selection_options(p)
    p.add_argument(
        "--per-family", type=at_least(1), default=None, metavar="N",
        help="at most N tasks of each family (default: every task of the split)",
    )  # fmt: skip
    p.add_argument("--skip-tasks", default=None, metavar="IDS", help="leave out these task ids, joined by commas")
    p.add_argument("--split", choices=("train", "dev", "test"), default="test", help="the tasks' split (default test)")
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of every perturbation (default 0)")
    p.add_argument("--batch-size", type=at_least(1), default=256, help="episodes run at once (default 256)")
    add_episode_options(p)
    p.add_argument("--json", default=None, metavar="FILE", help="also write the matrix and the failures as JSON")
    p.add_argument(
        "--show", type=at_least(0), default=10, metavar="N",
        help="print the explanation of at most N failing cases (default 10; the JSON holds every one)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from sandbox.audits.check_domain import check_domain
    from sandbox.evaluation.draw import check_tasks
    from sandbox.evaluation.runner import WorldFailed
    from sandbox.files import check_output_file

    tiers, names = selection(args)
    if args.json:
        check_output_file(Path(args.json), "the matrix")
    mcp = args.tasks is not None or args.spec.startswith(MCP_PREFIXES)
    given = [f"--{k.replace('_', '-')}" for k in ("mcp_reset", "mcp_inspect", "mcp_roles") if getattr(args, k, None)]
    if given and not mcp:
        raise UsageError(f"{given[0]} is about an MCP server, and {args.spec!r} is none: give a server "
                         "('stdio:COMMAND', 'http://HOST:PORT/mcp') with --tasks FILE, or drop it")  # fmt: skip
    domain = configure_mcp(args.spec, args) if mcp else args.spec
    families = args.families.split(",") if args.families else None
    skip = [t for t in (args.skip_tasks or "").split(",") if t]
    check_tasks(domain, args.split, families, args.per_family, skip)
    check_cache(args)
    try:
        result = check_domain(
            domain, split=args.split, tiers=tiers, names=names, families=families, per_family=args.per_family,
            skip=skip, seed=args.seed, pool=args.pool, cache_dir=None if args.no_cache else args.cache_dir,
            batch_size=args.batch_size, max_steps=args.max_steps,
            progress=lambda line: print(line, file=sys.stderr), drift=args.drift,
        )  # fmt: skip
    except WorldFailed as exc:
        print(f"openagent check-domain: no verdict on the oracle: {exc}", file=sys.stderr)
        return EXIT_AGENT_FAILED
    result.meta["spec"] = args.spec
    if args.json:  # before any output: a reader that stops early (| head) must not cost the matrix
        result.to_json(args.json)
    say(result.text(args.show, args.json))
    return EXIT_GATE_FAILED if result.failures else EXIT_OK
