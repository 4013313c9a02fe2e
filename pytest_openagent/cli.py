"""The ``openagent`` command. Each subcommand is a :class:`Command` in ``COMMANDS``.

To add one, append a ``Command`` whose ``configure`` adds its arguments and whose ``run`` returns
an exit code; import anything heavy (torch, training) inside ``run`` so ``openagent eval`` stays fast.
Exit codes: 0 ok (the gate PASSed), 1 the gate FAILed, 2 misuse (bad arguments or inputs), 3 the gate
was INCONCLUSIVE (``--inconclusive`` maps it to 1 or 0 instead), 4 no measurement: the agent failed on
most episodes with one cause (a dead server, a bad key).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_openagent.console import at_least, quiet_stdout, say
from sandbox.errors import MissingExtra, UsageError, install_line
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, check_folder
from sandbox.evaluation.gate import DEFAULT_GATE, DEFAULT_MARGIN, EXAMPLE, GateResult
from sandbox.evaluation.specs import SPEC_HELP

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_INCONCLUSIVE, EXIT_AGENT_FAILED = 0, 1, 2, 3, 4
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a command that SIGPIPE ended: one whose output stopped being read mid-way."""


UsageFailure = UsageError
"""Misuse that ``main`` reports as ``openagent <command>: error: ...`` with exit code 2."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _configure_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, help=SPEC_HELP)
    _add_selection_options(p)
    p.add_argument("--n", type=at_least(1), default=50, help="cases per tier (default 50)")
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of the drawn cases (default 0)")
    p.add_argument(
        "--domain", default=None,
        help="poi, medical, all, a registered or entry-point domain's name, or module:attribute naming a "
        "sandbox.Domain (default poi; mcp with --mcp)",
    )  # fmt: skip
    p.add_argument(
        "--mcp", default=None, metavar="SERVER",
        help="an MCP server as the domain: 'stdio:COMMAND', 'http://HOST:PORT/mcp' or module:attribute naming an "
        "SDK server object",
    )  # fmt: skip
    _add_mcp_options(p)
    p.add_argument("--max-stack", type=at_least(1), default=1, help="most perturbations per case (default 1)")
    p.add_argument("--batch-size", type=at_least(1), default=64, help="episodes per agent batch (default 64)")
    _add_episode_options(p)
    p.add_argument(
        "--worst", type=at_least(1), default=None, metavar="N",
        help="also search each tier for the worst case with N cases (Hypothesis' target(), then shrinking; from "
        "--seed) and re-run its stack on other tasks of its family; gated as worst.TIER.success",
    )  # fmt: skip
    p.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")
    p.add_argument("--html", default=None, metavar="FILE", help=HTML_HELP)
    p.add_argument(
        "--plot", default=None, metavar="FILE",
        help="also draw the sensitivity curves (success against severity per perturbation) as a PNG; needs the "
        "plot extra",
    )  # fmt: skip
    p.add_argument("--gate", default=None, help=f"criteria to check, e.g. {EXAMPLE!r}, or 'default'")
    _add_baseline(p)
    _add_inconclusive(p)


def _add_selection_options(p: argparse.ArgumentParser) -> None:
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


def _selection(args: argparse.Namespace) -> tuple[str | list[str | int], list[str] | None]:
    """The tiers and perturbation names that ``_add_selection_options`` gave, checked."""
    from sandbox.evaluation.draw import perturbation_classes

    tiers = _tiers(args.tiers)
    names = args.names.split(",") if args.names else None
    if names is not None:
        perturbation_classes(tiers, names)
    return tiers, names


def _add_episode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-steps", type=at_least(1), default=None,
        help="step limit of every episode (default: each case's own, from its plan and its perturbations)",
    )  # fmt: skip
    p.add_argument(
        "--cache-dir", default=str(DEFAULT_CACHE_DIR), help=f"episode cache folder (default {DEFAULT_CACHE_DIR})"
    )
    p.add_argument("--no-cache", action="store_true", help="run every episode afresh")


def _check_cache(args: argparse.Namespace) -> None:
    if not args.no_cache:
        try:
            check_folder(Path(args.cache_dir))
        except UsageError as exc:
            raise UsageFailure(f"--cache-dir: {exc} (--no-cache)") from None


def _tiers(text: str) -> str | list[str | int]:
    from sandbox.perturbations.registry import normalize_tiers

    if text.strip() == "all":
        return "all"
    tiers: list[str | int] = [int(t) if t.strip().isdigit() else t.strip() for t in text.split(",") if t.strip()]
    try:
        normalize_tiers(tiers)
    except UsageError as exc:
        raise UsageFailure(f"--tiers {text!r}: {exc}") from None
    return tiers


def _run_eval(args: argparse.Namespace) -> int:
    from sandbox.evaluation.draw import domain_names
    from sandbox.evaluation.evaluate import evaluate
    from sandbox.evaluation.gate import check, check_margin, compare, parse_gate
    from sandbox.evaluation.report import Report
    from sandbox.evaluation.runner import AgentFailure
    from sandbox.evaluation.specs import check_agent, load_agent
    from sandbox.files import check_output_file

    # Every input checked before any episode runs: a typo never costs a run.
    tiers, names = _selection(args)
    criteria = parse_gate(args.gate) if args.gate else []
    margin = check_margin(args.max_regression)
    baseline = Report.load(args.baseline) if args.baseline else None
    if args.json:
        check_output_file(Path(args.json))
    if args.html:
        check_output_file(Path(args.html), "the HTML report")
    if args.plot:
        from sandbox.evaluation.figures import require_plot

        check_output_file(Path(args.plot), "the figure")
        require_plot()
    domain = _eval_domain(args)
    domain_names(domain)
    check_agent(args.agent)
    _check_cache(args)
    try:
        agent = load_agent(args.agent)
        report = evaluate(
            agent, tiers, n=args.n, seed=args.seed, domain=domain, names=names, max_stack=args.max_stack,
            batch_size=args.batch_size, cache_dir=None if args.no_cache else args.cache_dir, pool=args.pool,
            families=args.families.split(",") if args.families else None, max_steps=args.max_steps,
            drift=args.drift,
        )  # fmt: skip
        if args.worst is not None:
            from pytest_openagent.search import worst_of

            report.worst = worst_of(
                agent, report, args.worst, args.seed, domain=domain, names=names, max_stack=args.max_stack,
                families=args.families.split(",") if args.families else None, max_steps=args.max_steps,
                cache_dir=None if args.no_cache else args.cache_dir,
            )  # fmt: skip
    except AgentFailure as exc:
        print(f"openagent eval: no measurement: {exc}", file=sys.stderr)
        return EXIT_AGENT_FAILED
    report.meta["agent"] = args.agent
    if args.mcp is not None:
        report.meta["mcp"] = args.mcp
    meta = report.meta
    reused = "shared by identical cases" if args.no_cache else "from the cache"
    result = None
    if criteria or baseline is not None:
        result = GateResult()
        if criteria:
            result += check(report, criteria)
        if baseline is not None:
            result += compare(report, baseline, margin)
    if args.json:  # before any output: a reader that stops early (| head) must not cost the report
        report.to_json(args.json)
    from sandbox.evaluation.html_report import write_pages

    written = write_pages(report, args.html, args.plot, result, baseline)
    say(
        f"openagent eval: agent={args.agent}, seed={args.seed}, {len(report.records)} cases; "
        f"{meta['episodes_run']} episodes run, {meta['episodes_cached']} {reused}"
    )
    say(report.table())
    say("\nsuccess against severity (s=0: the same tasks clean)\n" + report.sensitivity_table())
    for line in [f"report written to {args.json}"] * bool(args.json) + written:
        say(line)
    if result is not None:
        return _verdict(result, args.inconclusive)
    return EXIT_OK


def _eval_domain(args: argparse.Namespace) -> str:
    """The domain ``--domain`` names; with ``--mcp``, the server's (``mcp``) unless ``--domain`` says otherwise."""
    if args.mcp is None:
        given = [
            f"--{k.replace('_', '-')}" for k in ("tasks", "mcp_reset", "mcp_inspect", "mcp_roles") if getattr(args, k)
        ]
        if given:
            raise UsageFailure(f"{given[0]} is about an MCP server: add --mcp SERVER (a domain you write brings its "
                               "own tasks and state: --domain module:attribute)")  # fmt: skip
        return args.domain or "poi"
    return args.domain or _configure_mcp(args.mcp, args)


def _add_mcp_options(p: argparse.ArgumentParser) -> None:
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


def _configure_mcp(server: str, args: argparse.Namespace) -> str:
    """Configure the ``mcp`` domain from ``server`` and the options of :func:`_add_mcp_options`; its name. The tasks
    file's header gives the step budget where ``--max-steps`` does not."""
    from sandbox.domains.mcp import NAME, configure
    from sandbox.domains.mcp.settings import McpSettings, parse_inspect, parse_reset, parse_roles

    def read(flag: str, value: str | None, parse: Callable[[str], Any]) -> Any:
        try:
            return None if value is None else parse(value)
        except UsageError as exc:
            raise UsageFailure(f"{flag}: {exc}") from None

    settings = McpSettings(
        reset=read("--mcp-reset", args.mcp_reset, parse_reset),
        inspect=read("--mcp-inspect", args.mcp_inspect, parse_inspect),
        roles=read("--mcp-roles", args.mcp_roles, parse_roles) or {},
    )
    in_force = configure(server, args.tasks, settings)
    if args.max_steps is None:
        args.max_steps = in_force.max_steps
    return NAME


MCP_PREFIXES = ("stdio:", "http://", "https://")


def _configure_check_domain(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "spec", metavar="SPEC",
        help="the world to check: a registered or entry-point domain's name, module:attribute naming a sandbox.Domain, "
        "or an MCP server ('stdio:COMMAND', 'http://HOST:PORT/mcp', or module:attribute naming an SDK server object "
        "when --tasks is given)",
    )  # fmt: skip
    _add_mcp_options(p)
    _add_selection_options(p)
    p.add_argument(
        "--per-family", type=at_least(1), default=None, metavar="N",
        help="at most N tasks of each family (default: every task of the split)",
    )  # fmt: skip
    p.add_argument("--skip-tasks", default=None, metavar="IDS", help="leave out these task ids, joined by commas")
    p.add_argument("--split", choices=("train", "dev", "test"), default="test", help="the tasks' split (default test)")
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of every perturbation (default 0)")
    p.add_argument("--batch-size", type=at_least(1), default=256, help="episodes run at once (default 256)")
    _add_episode_options(p)
    p.add_argument("--json", default=None, metavar="FILE", help="also write the matrix and the failures as JSON")
    p.add_argument(
        "--show", type=at_least(0), default=10, metavar="N",
        help="print the explanation of at most N failing cases (default 10; the JSON holds every one)",
    )  # fmt: skip


def _run_check_domain(args: argparse.Namespace) -> int:
    from sandbox.evaluation.check_domain import check_domain, check_tasks
    from sandbox.files import check_output_file

    tiers, names = _selection(args)
    if args.json:
        check_output_file(Path(args.json), "the matrix")
    mcp = args.tasks is not None or args.spec.startswith(MCP_PREFIXES)
    domain = _configure_mcp(args.spec, args) if mcp else args.spec
    families = args.families.split(",") if args.families else None
    skip = [t for t in (args.skip_tasks or "").split(",") if t]
    check_tasks(domain, args.split, families, args.per_family, skip)
    _check_cache(args)
    result = check_domain(
        domain, split=args.split, tiers=tiers, names=names, families=families, per_family=args.per_family, skip=skip,
        seed=args.seed, pool=args.pool, cache_dir=None if args.no_cache else args.cache_dir,
        batch_size=args.batch_size, max_steps=args.max_steps, progress=lambda line: print(line, file=sys.stderr),
        drift=args.drift,
    )  # fmt: skip
    result.meta["spec"] = args.spec
    if args.json:  # before any output: a reader that stops early (| head) must not cost the matrix
        result.to_json(args.json)
    say(result.text(args.show, args.json))
    return EXIT_GATE_FAILED if result.failures else EXIT_OK


def _add_inconclusive(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--inconclusive", choices=("code", "fail", "pass"), default="code",
        help=f"an INCONCLUSIVE verdict exits {EXIT_INCONCLUSIVE} (code, default), 1 (fail) or 0 (pass)",
    )  # fmt: skip


def _verdict(result: GateResult, inconclusive: str) -> int:
    say(result.message())
    if result.verdict == "PASS":
        return EXIT_OK
    if result.verdict == "FAIL":
        return EXIT_GATE_FAILED
    return {"code": EXIT_INCONCLUSIVE, "fail": EXIT_GATE_FAILED, "pass": EXIT_OK}[inconclusive]


def _configure_gate(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report JSON (from --openagent-report or openagent eval --json)")
    p.add_argument("--gate", default=None, help=f"criteria, e.g. {EXAMPLE!r}, or 'default' ({DEFAULT_GATE!r})")
    _add_baseline(p)
    p.add_argument("--html", default=None, metavar="FILE", help=HTML_HELP)
    _add_inconclusive(p)


HTML_HELP = "also write the report as one self-contained HTML page (tables, verdicts, figures, failing cases)"


def _add_baseline(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", default=None, help="a baseline report JSON to compare against on the same cases")
    p.add_argument(
        "--max-regression", default=DEFAULT_MARGIN,
        help=f"non-inferiority margin: most points of success a scope may lose (default {DEFAULT_MARGIN:g})",
    )  # fmt: skip


def _run_gate(args: argparse.Namespace) -> int:
    from sandbox.evaluation.gate import check, check_margin, compare, parse_gate
    from sandbox.evaluation.report import Report
    from sandbox.files import check_output_file

    if not args.gate and not args.baseline:
        raise UsageFailure("give --gate CRITERIA, --baseline REPORT, or both")
    margin = check_margin(args.max_regression)
    report = Report.load(args.report)
    baseline = Report.load(args.baseline) if args.baseline else None
    if args.html:
        check_output_file(Path(args.html), "the HTML report")
    result = GateResult()
    if args.gate:
        result += check(report, parse_gate(args.gate))
    if baseline is not None:
        result += compare(report, baseline, margin)
    from sandbox.evaluation.html_report import write_pages

    written = write_pages(report, args.html, None, result, baseline)
    say("\n".join([report.table(), *written]))
    return _verdict(result, args.inconclusive)


def _configure_mcp_proxy(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--port", type=int, default=8765, help="http: the port to listen on (default 8765)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds an upstream call may take (default 10)")


def _run_mcp_proxy(args: argparse.Namespace) -> int:
    from sandbox.domains.mcp import require_sdk

    require_sdk()
    from sandbox.proxy.serve import run_proxy

    return run_proxy(
        args.upstream, args.perturb, seed=args.seed, pool=args.pool, tasks=args.tasks, task=args.task,
        case_file=args.case, transport=args.transport, host=args.host, port=args.port, timeout=args.timeout,
    )  # fmt: skip


COMMANDS: list[Command] = [
    Command("eval", "evaluate an agent at fixed seeds and print the robustness table", _configure_eval, _run_eval),
    Command(
        "check-domain",
        "prove a world: the oracle and the static baseline on every task under every perturbation and severity",
        _configure_check_domain,
        _run_check_domain,
    ),
    Command("gate", "check a report against a gate or a baseline report", _configure_gate, _run_gate),
    Command(
        "mcp-proxy",
        "serve an MCP server's tools perturbed, over stdio or streamable HTTP, to an agent that speaks MCP",
        _configure_mcp_proxy,
        _run_mcp_proxy,
    ),
    Command(
        "base",
        "prepare the default base model (SmolLM2-135M-Instruct) and print where it is",
        lambda p: _training_cli().configure_base(p),
        lambda args: _training_cli().run_base(args),
    ),
    Command(
        "gguf",
        "write a checkpoint as a GGUF file for llama.cpp's OpenAI-compatible server (docs/serving.md)",
        lambda p: _training_cli().configure_gguf(p),
        lambda args: _training_cli().run_gguf(args),
    ),
    Command(
        "train",
        "fine-tune an agent on the sandbox: sft, paft (perturbation-augmented) or rl (GRPO)",
        lambda p: _training_cli().configure_train(p),
        lambda args: _training_cli().run_train(args),
    ),
    Command(
        "data",
        "write training data as chat JSONL: export (the SFT/PAFT data) or from-report (a report's failures)",
        lambda p: _training_cli().configure_data(p),
        lambda args: _training_cli().run_data(args),
    ),
    Command(
        "demo",
        "train SFT, PAFT and RL agents here and print the robustness table beside the base, oracle, static",
        lambda p: _training_cli().configure_demo(p),
        lambda args: _training_cli().run_demo(args),
    ),
]


def _training_cli():
    try:
        from training import cli
    except ModuleNotFoundError as exc:
        raise MissingExtra(f"this command needs the `train` extra ({exc.name} not installed); install it: "
                           f"{install_line('train')}") from None  # fmt: skip
    return cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openagent", description="Tool-use agent robustness to open-world shifts.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.configure(p)
        p.set_defaults(_command=command, _parser=p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._command.run(args)
    except UsageError as exc:
        args._parser.error(str(exc))  # exits with EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a command that prints with print() whose reader went away: it ended there
        quiet_stdout()
        return EXIT_BROKEN_PIPE
    return EXIT_USAGE  # pragma: no cover - parser.error exits


if __name__ == "__main__":
    sys.exit(main())
