"""The arguments that several ``openagent`` commands share, and the exit codes they return."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_openagent.console import at_least, say
from sandbox.errors import UsageError
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, check_folder
from sandbox.evaluation.gate import DEFAULT_MARGIN, GateResult

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_INCONCLUSIVE, EXIT_AGENT_FAILED = 0, 1, 2, 3, 4

HTML_HELP = "also write the report as one self-contained HTML page (tables, verdicts, figures, failing cases)"

MCP_PREFIXES = ("stdio:", "http://", "https://")


def add_selection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tiers", default="all", help="tiers of perturbations: all, or names/numbers joined by commas")
    p.add_argument("--names", default=None, help="only these perturbations, joined by commas")
    p.add_argument("--families", default=None, help="only tasks of these task families, joined by commas")
    p.add_argument(
        "--drift", action="store_true",
        help="drift too: a perturbation of the tool surface or of interaction that starts after turn k (eval: --n "
        "drift cases per tier more, in rows <tier>-drift; check-domain: each such perturbation at onsets 1 and 2)",
    )  # fmt: skip
    p.add_argument(
        "--pool", choices=("eval", "train"), default="eval",
        help="the perturbations' held-out texts (eval, default) or those training uses (train)",
    )  # fmt: skip


def selection(args: argparse.Namespace) -> tuple[str | list[str | int], list[str] | None]:
    """The tiers and perturbation names that ``add_selection_options`` gave, checked."""
    from sandbox.evaluation.draw import perturbation_classes

    tiers = parse_tiers(args.tiers)
    names = args.names.split(",") if args.names else None
    if names is not None:
        perturbation_classes(tiers, names)
    return tiers, names


def add_episode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-steps", type=at_least(1), default=None,
        help="step limit of every episode (default: each case's own, from its plan and its perturbations)",
    )  # fmt: skip
    p.add_argument(
        "--cache-dir", default=str(DEFAULT_CACHE_DIR), help=f"episode cache folder (default {DEFAULT_CACHE_DIR})"
    )
    p.add_argument("--no-cache", action="store_true", help="run every episode afresh")


def check_cache(args: argparse.Namespace) -> None:
    if not args.no_cache:
        try:
            check_folder(Path(args.cache_dir))
        except UsageError as exc:
            raise UsageError(f"--cache-dir: {exc} (--no-cache)") from None


def parse_tiers(text: str) -> str | list[str | int]:
    from sandbox.perturbations.registry import normalize_tiers

    if text.strip() == "all":
        return "all"
    tiers: list[str | int] = [int(t) if t.strip().isdigit() else t.strip() for t in text.split(",") if t.strip()]
    try:
        normalize_tiers(tiers)
    except UsageError as exc:
        raise UsageError(f"--tiers {text!r}: {exc}") from None
    return tiers


def add_mcp_options(p: argparse.ArgumentParser) -> None:
    """The options that describe an MCP server's world, shared by every command that takes one."""
    p.add_argument("--tasks", default=None, metavar="FILE", help="the MCP server's tasks: a JSONL (or YAML) file")
    p.add_argument(
        "--mcp-reset", default=None, metavar="RESET",
        help="how the MCP server is brought back to its first state between episodes, verified before use: auto "
        "(default), restart, tool:NAME, none (the writes do not matter) or module:function",
    )  # fmt: skip
    p.add_argument(
        "--mcp-inspect", default=None, metavar="INSPECT",
        help="how to read the MCP server's state for end states: tool:NAME or module:function",
    )  # fmt: skip
    p.add_argument(
        "--mcp-roles", default=None, metavar="ROLES",
        help="roles of the MCP server's tools: tool=role pairs joined by commas (lookup, write, wait)",
    )  # fmt: skip


def configure_mcp(server: str, args: argparse.Namespace) -> str:
    """Configure the ``mcp`` domain from ``server`` and the options of :func:`add_mcp_options`; its name. The tasks
    file's header gives the step budget where ``--max-steps`` does not."""
    from sandbox.domains.mcp import NAME, configure
    from sandbox.domains.mcp.settings import McpSettings, parse_inspect, parse_reset, parse_roles

    def read(flag: str, value: str | None, parse: Callable[[str], Any]) -> Any:
        try:
            return None if value is None else parse(value)
        except UsageError as exc:
            raise UsageError(f"{flag}: {exc}") from None

    settings = McpSettings(
        reset=read("--mcp-reset", args.mcp_reset, parse_reset),
        inspect=read("--mcp-inspect", args.mcp_inspect, parse_inspect),
        roles=read("--mcp-roles", args.mcp_roles, parse_roles) or {},
    )
    in_force = configure(server, args.tasks, settings)
    if args.max_steps is None:
        args.max_steps = in_force.max_steps
    return NAME


def add_baseline(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", default=None, help="a baseline report JSON to compare against on the same cases")
    p.add_argument(
        "--max-regression", default=DEFAULT_MARGIN,
        help=f"non-inferiority margin: most points of success a scope may lose (default {DEFAULT_MARGIN:g})",
    )  # fmt: skip


def add_price(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--price", default=None, metavar="MODEL=PROMPT/COMPLETION",
        help="the agent's model's prices per million prompt and completion tokens (e.g. 'gpt-4o-mini=0.15/0.60'): "
        "the report then gives what its episodes cost in money",
    )  # fmt: skip


def add_inconclusive(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--inconclusive", choices=("code", "fail", "pass"), default="code",
        help=f"an INCONCLUSIVE verdict exits {EXIT_INCONCLUSIVE} (code, default), 1 (fail) or 0 (pass)",
    )  # fmt: skip


def verdict(result: GateResult, inconclusive: str) -> int:
    say(result.message())
    if result.verdict == "PASS":
        return EXIT_OK
    if result.verdict == "FAIL":
        return EXIT_GATE_FAILED
    return {"code": EXIT_INCONCLUSIVE, "fail": EXIT_GATE_FAILED, "pass": EXIT_OK}[inconclusive]
