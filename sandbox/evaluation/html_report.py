"""The report as one self-contained HTML page: no network, no script, figures inlined as ``data:`` URIs.

The page is a list of sections (:data:`SECTIONS`), each a function of the :class:`Page` that returns an
HTML fragment, or ``""`` where it has nothing to show. A new kind of figure adds its section to the list.
Everything that comes from a report, an agent or a tool is escaped (:func:`html.escape`). A number on the
page carries its source in ``data-`` attributes (``data-scope``, ``data-metric``, ``data-value``), so
that a reader of the DOM (the browser test) can tell which figure of the report it is.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.evaluation.sensitivity import CLEAN_SEVERITY, curves
from sandbox.files import write_atomically
from sandbox.perturbations.base import TIERS

if TYPE_CHECKING:
    from sandbox.evaluation.gate import GateResult
    from sandbox.evaluation.report import Report, Row
    from sandbox.metrics import Rate

MAX_LISTED = 200
"""Failing cases of a sample listed by name at most (the rest are counted)."""


@dataclass
class Page:
    """What the page shows: the report, the gate's checks (a baseline comparison among them) and the baseline."""

    report: Report
    gate: GateResult | None = None
    baseline: Report | None = None
    figures: bool = True
    """Draw the figures (needs matplotlib; without it the page says how to get them)."""


Section = Callable[[Page], str]


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def percent(value: float) -> str:
    return "-" if value != value else f"{100 * value:.1f}%"


def rate_cell(rate: Rate, scope: str, metric: str) -> str:
    """A rate as ``12.5% [4.1%, 32.0%] (3/24)``, its figures in ``data-`` attributes too."""
    if rate.n == 0:
        return f'<td class="num" data-scope="{esc(scope)}" data-metric="{esc(metric)}" data-n="0">-</td>'
    low, high = rate.interval
    return (
        f'<td class="num" data-scope="{esc(scope)}" data-metric="{esc(metric)}" data-value="{rate.value:.6f}" '
        f'data-k="{rate.k}" data-n="{rate.n}"><b>{percent(rate.value)}</b> '
        f'<span class="ci">[{percent(low)}, {percent(high)}]</span> <span class="kn">({rate.k}/{rate.n})</span></td>'
    )


def table(headers: Sequence[str], rows: Iterable[str], cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="scroll">{body}</div>'


def section(key: str, title: str, body: str) -> str:
    return f'<section id="{esc(key)}"><h2>{esc(title)}</h2>{body}</section>'


def image(png: bytes | None, alt: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    caption = f"<figcaption>{esc(alt)}</figcaption>"
    return f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}">{caption}</figure>'


# -- sections ----------------------------------------------------------------------------------------


def summary(page: Page) -> str:
    meta = page.report.meta
    keys = ("agent", "kind", "domain", "split", "seed", "n", "tiers", "names", "pool", "max_stack", "max_steps",
            "sandbox_version", "created", "episodes_run", "episodes_cached")  # fmt: skip
    items = "".join(
        f'<tr><th>{esc(k)}</th><td data-meta="{esc(k)}">{esc(_shown(meta[k]))}</td></tr>'
        for k in keys
        if meta.get(k) is not None
    )
    cases = f'<p><span data-metric="cases">{len(page.report.records)}</span> cases and their clean twins.</p>'
    return section("summary", "What was measured", f"<table class=meta>{items}</table>{cases}")


def _shown(value: object) -> object:
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else value


def tier_table(page: Page) -> str:
    rows = []
    for row in page.report.rows():
        rows.append(_row(row))
    if not rows:
        return section("tiers", "Success per tier", "<p>No episodes.</p>")
    headers = ["scope", "episodes", "clean", "perturbed", "Δ points [95% CI]", "tool errors", "refusal",
               "refused solvable", "repeated writes", "fails clean too"]  # fmt: skip
    note = (
        "<p>Rates with their 95% Wilson intervals; Δ is perturbed minus clean success on the same tasks "
        "(Newcombe's paired interval). Clean: the clean twins of the perturbed cases.</p>"
    )
    return section("tiers", "Success per tier", note + table(headers, rows, "tiers"))


def _row(row: Row) -> str:
    scope = row.scope
    delta = '<td class="num"></td>'
    if row.kind != "clean":
        low, high = row.delta.interval
        delta = (
            f'<td class="num" data-scope="{esc(scope)}" data-metric="delta" data-value="{row.delta.points:.6f}">'
            f"<b>{row.delta.points:+.1f}</b> <span class=ci>[{low:+.1f}, {high:+.1f}]</span></td>"
        )
    success = '<td class="num"></td>' if row.kind == "clean" else rate_cell(row.perturbed, scope, "success")
    cells = [
        f'<td class="scope {esc(row.kind)}">{esc(scope)}</td>',
        f'<td class="num" data-scope="{esc(scope)}" data-metric="episodes" data-value="{row.episodes}">'
        f"{row.episodes}</td>",
        rate_cell(row.clean, scope, "clean"), success, delta,
        rate_cell(row.tool_errors, scope, "tool_errors"), rate_cell(row.refusal, scope, "refusal"),
        rate_cell(row.refused_solvable, scope, "wrong_refusal"),
        rate_cell(row.repeated_writes, scope, "repeated_write"),
        rate_cell(row.fails_clean, scope, "fails_clean"),
    ]  # fmt: skip
    return f'<tr class="{esc(row.kind)}">{"".join(cells)}</tr>'


def verdict(text: str) -> str:
    return f'<span class="verdict {esc(text)}" data-verdict="{esc(text)}">{esc(text)}</span>'


def outcome(text: str) -> str:
    return f'<span class="outcome {esc(text)}" data-outcome="{esc(text)}">{esc(text)}</span>'


def gate(page: Page) -> str:
    result = page.gate
    checks = [c for c in result.checks if not c.text.startswith("baseline")] if result is not None else []
    if result is None or not checks:
        return ""
    rows = [f"<tr><td><code>{esc(c.text)}</code></td><td>{verdict(c.verdict)}</td><td>{esc(c.detail)}</td></tr>"
            for c in checks]  # fmt: skip
    overall = result.verdict
    compared = " and of the baseline comparison below" if len(checks) < len(result.checks) else ""
    head = f"<p>Gate: {verdict(overall)}, the verdict of these checks{compared} (each from a 95% interval).</p>"
    return section("gate", "Gate", head + table(["criterion", "verdict", "measured"], rows, "gate"))


def baseline(page: Page) -> str:
    checks = [c for c in page.gate.checks if c.text.startswith("baseline")] if page.gate is not None else []
    if page.baseline is None and not checks:
        return ""
    rows = [f"<tr><td>{esc(c.text)}</td><td>{verdict(c.verdict)}</td><td>{esc(c.detail)}</td></tr>" for c in checks]
    body = ""
    if rows:
        from sandbox.evaluation.gate import GateResult

        body = f"<p>Comparison: {verdict(GateResult(checks).verdict)} (non-inferiority, paired on the same cases).</p>"
        body += table(["scope", "verdict", "paired difference"], rows, "baseline")
    if page.baseline is not None:
        mine = {r.scope: r for r in page.report.rows()}
        side = []
        for row in page.baseline.rows():
            if row.kind == "perturbation":
                continue
            here = mine.get(row.scope)
            rate = row.clean if row.kind == "clean" else row.perturbed
            now = "<td>-</td>" if here is None else rate_cell(here.clean if row.kind == "clean" else here.perturbed,
                                                               row.scope, "success")  # fmt: skip
            side.append(f"<tr><td>{esc(row.scope)}</td>{rate_cell(rate, row.scope, 'baseline_success')}{now}</tr>")
        body += "<h3>Success side by side</h3>" + table(["scope", "baseline", "this report"], side, "side")
    return section("baseline", "Comparison with the baseline", body)


def figures(page: Page) -> str:
    if not page.figures or not page.report.records:
        return ""
    from sandbox.errors import MissingExtra
    from sandbox.evaluation.figures import sensitivity_figure, tier_figure

    try:
        body = image(tier_figure(page.report), "success per tier, 95% intervals")
        body += image(sensitivity_figure(page.report), "sensitivity: success against severity per perturbation")
    except MissingExtra as exc:
        body = f"<p>No figures: {esc(exc)}</p>"
    return section("figures", "Figures", body)


def sensitivity(page: Page) -> str:
    by_name = curves(page.report.sensitivity())
    if not by_name:
        return ""
    severities = sorted({d.severity for points in by_name.values() for d in points})
    rows = []
    for name, points in by_name.items():
        at = {d.severity: d.success for d in points}
        cells = "".join(
            rate_cell(at[s], name, f"severity_{s}") if s in at else '<td class="num"></td>' for s in severities
        )
        rows.append(f"<tr><td>{esc(name)}</td><td>{esc(points[0].tier or '-')}</td>{cells}</tr>")
    headers = ["perturbation", "tier", *[f"s={s}" + (" (clean)" if s == CLEAN_SEVERITY else "") for s in severities]]
    note = "<p>Success against severity for each perturbation; s=0 is the clean twins of the same tasks.</p>"
    return section("sensitivity", "Sensitivity (dose-response)", note + table(headers, rows, "sensitivity"))


def detection(page: Page) -> str:
    rows = [
        f'<tr class="{esc(d.kind)}"><td class="scope">{esc(d.name)}</td>'
        + "".join(rate_cell(getattr(d, m), d.name, m) for m in ("noticed", "recovered", "went_on"))
        + "</tr>"
        for d in page.report.detection()
    ]
    note = (
        "<p>Of the cases that met a fault (a transient error, a rate limit, a moved tool, a wrong answer, a fault "
        "of the agent's own model): noticed, the agent called the tool again or the one the error names, said so, "
        "or its loop asked its model again; recovered, the episode succeeded; went on, neither. 95% Wilson "
        "intervals.</p>"
    )
    return section("detection", "Noticed apart from recovered", note + table(
        ["scope", "noticed", "recovered", "went on"], rows, "detection")) if rows else ""  # fmt: skip


def failures(page: Page) -> str:
    report = page.report
    if report.failures:
        items = []
        for failure in report.failures:
            r = failure.record
            items.append(
                f'<details class="failure" open><summary><code>{esc(r.test)}</code>: {outcome(r.outcome)} on '
                f"<code>{esc(r.label)}</code> (clean twin: {esc(r.clean_outcome)})</summary>"
                f"<pre>{esc(failure.explanation)}</pre></details>"
            )
        note = "<p>Each failed property test's case as Hypothesis shrank it, with the episode's trajectory.</p>"
        return section("failures", f"Failing cases ({len(report.failures)})", note + "".join(items))
    failed = [r for r in report.perturbed if not r.success]
    if not failed:
        return ""
    failed.sort(key=lambda r: (TIERS.index(r.tier) if r.tier in TIERS else len(TIERS), r.perturbations, r.label))
    rows = [
        f"<tr><td>{esc(r.tier or '-')}</td><td><code>{esc(r.label)}</code></td><td>{outcome(r.outcome)}</td>"
        f"<td>{esc(r.clean_outcome)}</td></tr>"
        for r in failed[:MAX_LISTED]
    ]
    more = (
        f"<p>and {len(failed) - MAX_LISTED} more (the JSON report holds every case).</p>"
        if len(failed) > MAX_LISTED
        else ""
    )
    listed = table(["tier", "case", "outcome", "clean twin"], rows, "failed") + more
    body = (
        f"<details><summary>{len(failed)} of {len(report.perturbed)} cases failed, by tier</summary>{listed}</details>"
    )
    return section("failures", f"Failing cases of the sample ({len(failed)})", body)


def search(page: Page) -> str:
    explored = page.report.search
    if explored is None or explored is page.report or not explored.records:
        return ""
    rows = [_row(r) for r in explored.rows()]
    headers = ["scope", "episodes", "clean", "perturbed", "Δ points", "tool errors", "refusal", "refused solvable",
               "repeated writes", "fails clean too"]  # fmt: skip
    note = f"<p>{len(explored.records)} cases the property tests explored (not gated: Hypothesis chose them).</p>"
    return section("search", "Search", note + f'<div class="search">{table(headers, rows, "tiers search")}</div>')


def worst(page: Page) -> str:
    """The worst case a search found per tier, as the terminal and the JSON give it (``worst_table``)."""
    found = page.report.worst
    if not found:
        return ""
    from sandbox.evaluation.worst_case import worst_table

    means = {row.scope: row.perturbed for row in page.report.rows() if row.kind == "tier"}
    rows = []
    for w in found:
        around = w.neighbourhood
        if around.n:
            rerun = (f"{around.k}/{around.n} other {esc(w.family)} tasks succeed; failure rate at least "
                     f"{percent(w.failure_bound)}")  # fmt: skip
        else:
            rerun = esc(w.not_rerun or f"no other {w.family} task to re-run its stack on")
        rows.append(
            f'<tr data-scope="worst.{esc(w.tier)}"><td>{esc(w.tier)}</td><td><code>{esc(w.shrunk or w.case)}</code>'
            f'</td><td class="num">{w.score:.2f}</td><td class="num">{w.examples}</td><td>{rerun}</td></tr>'
        )
    text = worst_table(found, means, {r.agent for r in page.report.records})
    note = "<p>Search: Hypothesis' target(), then shrinking; not the sample's mean (gated as worst.TIER.success).</p>"
    body = table(["tier", "worst case (shrunk)", "degradation", "cases searched", "its stack elsewhere"], rows, "worst")
    return section("worst", "Worst case per tier", note + body + f"<pre>{esc(text)}</pre>")


def cost(page: Page) -> str:
    from sandbox.evaluation.cost import cost_rows, sources

    rows = cost_rows(page.report)
    priced = any(r.money is not None for r in rows)
    cells = []
    for r in rows:
        values = [("episodes_run", r.run), ("episodes_cached", r.cached), ("prompt_tokens", r.prompt),
                  ("completion_tokens", r.completion)] + ([("money", r.money)] if priced else [])  # fmt: skip
        tds = "".join(
            f'<td class="num" data-scope="{esc(r.scope)}" data-metric="{m}" data-value="{v}">'
            f"{esc(f'{v:.4f}' if isinstance(v, float) else f'{v:,}')}</td>"
            for m, v in values
        )
        cells.append(f'<tr><td class="scope">{esc(r.scope)}</td>{tds}</tr>')
    headers = ["scope", "episodes run", "cached", "prompt tokens", "completion tokens"] + ["money"] * priced
    wall = page.report.meta.get("wall_s")
    froms = ", ".join(f"{k}: {v} cases" for k, v in sources(page.report).items())
    note = f"<p>Tokens of the episodes run, from {esc(froms)} (estimated: 4 characters a token)"
    note += f"; wall time {wall:.1f} s.</p>" if isinstance(wall, int | float) else ".</p>"
    return section("cost", "What it cost", note + table(headers, cells, "cost"))


SECTIONS: list[tuple[str, Section]] = [
    ("summary", summary),
    ("gate", gate),
    ("baseline", baseline),
    ("tiers", tier_table),
    ("cost", cost),
    ("figures", figures),
    ("sensitivity", sensitivity),
    ("detection", detection),
    ("failures", failures),
    ("worst", worst),
    ("search", search),
]
"""The page's sections in order, by name: a new section (a worst case, drift) inserts itself where it belongs."""

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1500px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left}
td.num{text-align:right;white-space:nowrap}.ci,.kn{color:#666;font-size:.85em}.scroll{overflow-x:auto}
tr.perturbation td.scope{padding-left:1.6em;color:#444}tr.tier td,tr.all td{background:#f6f8fa}
.verdict{font-weight:bold;padding:0 .3em;border-radius:3px}.PASS,.success{background:#d9f2d9}
.FAIL{background:#f8d7d7}.INCONCLUSIVE{background:#fff1c2}.outcome{padding:0 .3em;background:#f3e3e3}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;white-space:pre-wrap}
figure{margin:1em 0}img{max-width:100%}figcaption{color:#666;font-size:.9em}
"""


def render(page: Page) -> str:
    """The page as HTML text."""
    agent = page.report.meta.get("agent", "")
    body = "".join(fragment for _, render_section in SECTIONS if (fragment := render_section(page)))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>pytest-openagent report: {esc(agent)}</title><style>{STYLE}</style></head>"
        f"<body><h1>pytest-openagent report: <code>{esc(agent)}</code></h1>{body}</body></html>\n"
    )


def write_html(
    report: Report,
    path: str | Path,
    gate: GateResult | None = None,
    baseline: Report | None = None,
    figures: bool = True,
) -> Path:
    """Write ``report`` (with the gate's checks and the baseline it was compared with, if any) as one HTML file
    at ``path``, atomically."""
    write_atomically(Path(path), render(Page(report, gate, baseline, figures)))
    return Path(path)


def write_pages(
    report: Report,
    html: str | Path | None = None,
    plot: str | Path | None = None,
    gate: GateResult | None = None,
    baseline: Report | None = None,
) -> list[str]:
    """Write what was asked for of the HTML page (``html``) and the sensitivity figure (``plot``); a line for
    each, saying where it went (or why the figure was not drawn)."""
    from sandbox.evaluation.figures import write_plot

    said = []
    if html is not None:
        said.append(f"HTML report written to {write_html(report, html, gate, baseline)}")
    if plot is not None:
        drawn = write_plot(report, plot)
        said.append(f"sensitivity figure written to {drawn}" if drawn else f"no sensitivity figure: no perturbed "
                    f"case to draw ({plot} not written)")  # fmt: skip
    return said
