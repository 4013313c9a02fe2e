"""``openagent gate``: a report on disk checked against criteria or a baseline."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_openagent.arguments import HTML_HELP, add_baseline, add_inconclusive, add_price, verdict
from pytest_openagent.console import say
from sandbox.errors import UsageError
from sandbox.evaluation.gate import DEFAULT_GATE, EXAMPLE, GateResult


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", help="a report JSON (from --openagent-report or openagent eval --json)")
    p.add_argument("--gate", default=None, help=f"criteria, e.g. {EXAMPLE!r}, or 'default' ({DEFAULT_GATE!r})")
    add_baseline(p)
    p.add_argument("--html", default=None, metavar="FILE", help=HTML_HELP)
    add_inconclusive(p)
    add_price(p)


def run(args: argparse.Namespace) -> int:
    from sandbox.evaluation.gate import check, check_margin, compare, parse_gate
    from sandbox.evaluation.report import Report
    from sandbox.files import check_output_file

    if args.gate is None and not args.baseline:
        raise UsageError("give --gate CRITERIA, --baseline REPORT, or both")
    margin = check_margin(args.max_regression)
    report = Report.load(args.report)
    if args.price:
        from sandbox.evaluation.cost import check_prices, parse_prices

        prices = check_prices(parse_prices(args.price), str(report.meta.get("agent", "")))
        report.meta["prices"] = {model: list(price) for model, price in prices.items()}
    baseline = Report.load(args.baseline) if args.baseline else None
    if args.html:
        check_output_file(Path(args.html), "the HTML report")
    result = GateResult()
    if args.gate is not None:
        result += check(report, parse_gate(args.gate))
    if baseline is not None:
        result += compare(report, baseline, margin)
    from sandbox.evaluation.html_report import write_pages

    written = write_pages(report, args.html, None, result, baseline)
    from sandbox.evaluation.cost import cost_table

    say("\n".join([report.table(), "\nwhat it cost", cost_table(report), *written]))
    return verdict(result, args.inconclusive)
