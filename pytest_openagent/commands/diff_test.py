"""``openagent diff-test OLD.json NEW.json``: a release of a user's MCP server, between two ``tools/list``
snapshots, applied to the world it describes; the tasks it broke, and an agent's verdict on each."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_openagent.arguments import (
    EXIT_AGENT_FAILED,
    EXIT_GATE_FAILED,
    EXIT_OK,
    add_episode_options,
    add_mcp_options,
    check_cache,
    configure_mcp,
)
from pytest_openagent.console import at_least, say
from sandbox.errors import UsageError


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD.json", help="the tools/list snapshot of the release the world runs")
    p.add_argument("new", metavar="NEW.json", help="the tools/list snapshot of the new release")
    p.add_argument(
        "--mcp", default=None, metavar="SERVER",
        help="the world: the MCP server that runs the old release ('stdio:COMMAND', 'http://HOST:PORT/mcp' or "
        "module:attribute), with its tasks (--tasks FILE)",
    )  # fmt: skip
    add_mcp_options(p)
    p.add_argument(
        "--domain", default=None,
        help="the world: a registered or entry-point domain's name, or module:attribute naming a sandbox.Domain "
        "(default with neither: the one registered domain that has every tool OLD lists)",
    )  # fmt: skip
    p.add_argument(
        "--agent", default=None,
        help="an agent to judge on every task the release touches (oracle, static, hf:PATH, openai:MODEL@URL or "
        "module:callable); default: the oracle alone, which proves which tasks the new release still solves",
    )  # fmt: skip
    p.add_argument(
        "--after", type=at_least(0), default=0, metavar="K",
        help="the release arrives after turn K of each episode (drift, with notifications/tools/list_changed); "
        "default 0: from the start",
    )  # fmt: skip
    p.add_argument("--split", choices=("train", "dev", "test"), default="test", help="the tasks' split (default test)")
    p.add_argument("--per-family", type=at_least(1), default=None, metavar="N", help="at most N tasks per family")
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of the tasks drawn (default 0)")
    p.add_argument("--batch-size", type=at_least(1), default=64, help="episodes run at once (default 64)")
    add_episode_options(p)
    p.add_argument("--json", default=None, metavar="FILE", help="also write the verdicts as JSON")
    p.add_argument("--show", type=at_least(0), default=5, metavar="N",
                   help="explain at most N of the agent's failures (default 5)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from sandbox.evaluation.diff_test import diff_test
    from sandbox.evaluation.runner import AgentFailure, WorldFailed
    from sandbox.evaluation.specs import check_agent, load_agent
    from sandbox.files import check_output_file
    from sandbox.perturbations.evolution.snapshot import read_snapshot

    for path in (args.old, args.new):
        read_snapshot(path)  # a file that is not a snapshot is misuse before any server starts
    if args.json:
        check_output_file(Path(args.json), "the verdicts")
    if args.mcp is not None and args.domain is not None:
        raise UsageError("--mcp and --domain both name the world: give one")
    if args.mcp is None and args.tasks is not None:
        raise UsageError("--tasks is about an MCP server: add --mcp SERVER")
    if args.agent is not None:
        check_agent(args.agent)
    check_cache(args)
    domain = configure_mcp(args.mcp, args) if args.mcp is not None else args.domain
    try:
        agent = load_agent(args.agent) if args.agent is not None else None
        result = diff_test(
            domain, args.old, args.new, agent=agent, after=args.after, split=args.split, per_family=args.per_family,
            seed=args.seed, cache_dir=None if args.no_cache else args.cache_dir, batch_size=args.batch_size,
            max_steps=args.max_steps,
        )  # fmt: skip
    except (AgentFailure, WorldFailed) as exc:
        print(f"openagent diff-test: no measurement: {exc}", file=sys.stderr)
        return EXIT_AGENT_FAILED
    result.meta["agent"] = args.agent or "oracle"
    if args.json:
        result.to_json(args.json)
    say(result.text(args.show))
    failed = result.broken or result.oracle_failures or result.agent_failures
    return EXIT_GATE_FAILED if failed else EXIT_OK
