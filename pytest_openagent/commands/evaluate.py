"""``openagent eval``: an agent on a fixed sample of cases, its table, report, pages and gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_openagent.arguments import (
    EXIT_AGENT_FAILED,
    EXIT_OK,
    HTML_HELP,
    add_baseline,
    add_episode_options,
    add_inconclusive,
    add_mcp_options,
    add_price,
    add_selection_options,
    check_cache,
    configure_mcp,
    selection,
    verdict,
)
from pytest_openagent.console import at_least, say
from sandbox.errors import UsageError
from sandbox.evaluation.gate import EXAMPLE, GateResult
from sandbox.evaluation.specs import SPEC_HELP


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, help=SPEC_HELP)
    add_selection_options(p)
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
    add_mcp_options(p)
    p.add_argument("--max-stack", type=at_least(1), default=1, help="most perturbations per case (default 1)")
    p.add_argument("--batch-size", type=at_least(1), default=64, help="episodes per agent batch (default 64)")
    add_episode_options(p)
    p.add_argument(
        "--worst", type=at_least(1), default=None, metavar="N",
        help="also search each tier for the worst case (Hypothesis' target(), then shrinking; from --seed) and re-run "
        "its stack on other tasks of its family; gated as worst.TIER.success. N bounds the cases generated before a "
        "failure (Hypothesis' max_examples), not the cases run: a failure found early stops it sooner, shrinking it "
        "runs more",
    )  # fmt: skip
    p.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")
    p.add_argument("--html", default=None, metavar="FILE", help=HTML_HELP)
    p.add_argument(
        "--plot", default=None, metavar="FILE",
        help="also draw the sensitivity curves (success against severity per perturbation) as a PNG; needs the "
        "plot extra",
    )  # fmt: skip
    p.add_argument("--gate", default=None, help=f"criteria to check, e.g. {EXAMPLE!r}, or 'default'")
    p.add_argument(
        "--sequential", action="store_true",
        help="run the sample in rounds and stop each --gate criterion once an anytime-valid interval (a confidence "
        "sequence) settles its verdict, or at --n",
    )  # fmt: skip
    add_baseline(p)
    add_inconclusive(p)
    add_price(p)


def run(args: argparse.Namespace) -> int:
    from sandbox.evaluation.cost import check_prices, cost_table, parse_prices
    from sandbox.evaluation.draw import domain_names
    from sandbox.evaluation.evaluate import evaluate_sample
    from sandbox.evaluation.gate import check, check_margin, compare, parse_gate
    from sandbox.evaluation.report import Report
    from sandbox.evaluation.runner import AgentFailure, WorldFailed
    from sandbox.evaluation.sample import Sample
    from sandbox.evaluation.specs import check_agent, load_agent
    from sandbox.files import check_output_file

    # Every input checked before any episode runs: a typo never costs a run.
    tiers, names = selection(args)
    criteria = parse_gate(args.gate) if args.gate is not None else []  # an empty --gate '' is misuse, said
    if args.sequential and not criteria:
        raise UsageError("--sequential stops criteria at their thresholds: give them with --gate (e.g. "
                         "'clean.success>=0.8')")  # fmt: skip
    if args.sequential and args.baseline:
        raise UsageError("--baseline reads every case of the baseline, which --sequential does not run: drop one")
    margin = check_margin(args.max_regression)
    prices = check_prices(parse_prices(args.price), args.agent) if args.price else None
    baseline = Report.load(args.baseline) if args.baseline else None
    if args.json:
        check_output_file(Path(args.json))
    if args.html:
        check_output_file(Path(args.html), "the HTML report")
    if args.plot:
        from sandbox.evaluation.figures import require_plot

        check_output_file(Path(args.plot), "the figure")
        require_plot()
    domain = eval_domain(args)
    domain_names(domain)
    check_agent(args.agent)
    check_cache(args)
    try:
        agent = load_agent(args.agent)
        from training.progress import Progress

        # a line now and then on stderr: a model agent's run is minutes between its weights bar and the table
        progress = Progress("openagent eval", lambda line: print(line, file=sys.stderr, flush=True))
        sample = Sample(
            tiers, n=args.n, seed=args.seed, domain=domain, names=names, max_stack=args.max_stack, pool=args.pool,
            families=args.families.split(",") if args.families else None, drift=args.drift,
        )  # fmt: skip
        cache_dir = None if args.no_cache else args.cache_dir
        report = evaluate_sample(
            agent, sample, batch_size=args.batch_size, cache_dir=cache_dir, max_steps=args.max_steps,
            sequential=criteria if args.sequential else None, progress=progress,
        )  # fmt: skip
        if args.worst is not None:
            from pytest_openagent.search import worst_of

            report.worst = worst_of(agent, report, args.worst, sample, max_steps=args.max_steps, cache_dir=cache_dir)
    except (AgentFailure, WorldFailed) as exc:
        print(f"openagent eval: no measurement: {exc}", file=sys.stderr)
        return EXIT_AGENT_FAILED
    report.meta["agent"] = args.agent
    if prices:
        report.meta["prices"] = {model: list(price) for model, price in prices.items()}
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
    say("\nwhat it cost\n" + cost_table(report))
    say("\nsuccess against severity (s=0: the same tasks clean)\n" + report.sensitivity_table())
    if report.detection():
        say("\nnoticed apart from recovered (cases that met a fault)\n" + report.detection_table())
    for line in [f"report written to {args.json}"] * bool(args.json) + written:
        say(line)
    if result is not None:
        return verdict(result, args.inconclusive)
    return EXIT_OK


def eval_domain(args: argparse.Namespace) -> str:
    """The domain ``--domain`` names; with ``--mcp``, the server's (``mcp``) unless ``--domain`` says otherwise."""
    if args.mcp is None:
        given = [
            f"--{k.replace('_', '-')}" for k in ("tasks", "mcp_reset", "mcp_inspect", "mcp_roles") if getattr(args, k)
        ]
        if given:
            raise UsageError(f"{given[0]} is about an MCP server: add --mcp SERVER (a domain you write brings its "
                               "own tasks and state: --domain module:attribute)")  # fmt: skip
        return args.domain or "poi"
    return args.domain or configure_mcp(args.mcp, args)
