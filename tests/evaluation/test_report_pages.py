"""Sensitivity curves, figures and the HTML page, from a measured report of the fragile toy agent.

``Fragile`` is the oracle except that it gives up on a query shouted with two marks or more: its curve under
``toy_shout`` stays at its clean skill at severity 1 and falls at 2 and 3.
"""

import dataclasses
import json
import re

import pytest

from sandbox.evaluation import check, compare, evaluate
from sandbox.evaluation.html_report import SECTIONS, Page, render, write_html
from sandbox.evaluation.report import Failure, Report
from sandbox.evaluation.sensitivity import CLEAN_SEVERITY, sensitivity
from tests import toys


@pytest.fixture(scope="module")
def report() -> Report:
    toys.register_toys()
    try:
        return evaluate(toys.Fragile(), names=["toy_shout", "toy_pad"], n=30, cache_dir=None)
    finally:
        toys.unregister_toys()


def _curve(report: Report, name: str) -> dict[int, tuple[int, int]]:
    return {d.severity: (d.success.k, d.success.n) for d in report.sensitivity() if d.perturbation == name}


def test_the_curve_starts_at_the_clean_twins_and_falls_where_the_agent_breaks(report):
    shout = _curve(report, "toy_shout")
    records = [r for r in report.records if "toy_shout" in r.perturbations]
    at = {s: [r for r in records if r.stack[0]["severity"] == s] for s in (1, 2, 3)}
    assert shout[CLEAN_SEVERITY] == (sum(r.clean_success for r in {r.task: r for r in records}.values()),
                                     len({r.task for r in records}))  # fmt: skip
    for severity, cases in at.items():
        assert shout[severity] == (sum(r.success for r in cases), len(cases))
    assert shout[1][0] == shout[1][1], "severity 1 (one mark) does not break the fragile agent"
    assert shout[2][0] < shout[2][1] and shout[3][0] < shout[3][1]
    assert sorted(shout) == [0, 1, 2, 3] and sum(n for s, (_, n) in shout.items() if s) == 30
    assert set(_curve(report, "toy_pad")) == {0, 1}


def test_a_stacked_case_counts_for_each_of_its_perturbations_at_its_own_severity(report):
    record = next(r for r in report.records if "toy_shout" in r.perturbations)
    pad = {"name": "toy_pad", "severity": 1, "pool": "eval", "seed": 0}
    stacked = dataclasses.replace(record, perturbations=("toy_shout", "toy_pad"), stack=(*record.stack, pad))
    doses = {(d.perturbation, d.severity): d.success for d in sensitivity([stacked])}
    shout = record.stack[0]["severity"]
    assert doses.keys() == {("toy_shout", 0), ("toy_shout", shout), ("toy_pad", 0), ("toy_pad", 1)}
    assert doses["toy_pad", 1].n == doses["toy_shout", shout].n == 1


def test_cases_with_an_onset_make_a_curve_of_their_own(report):
    record = next(r for r in report.records if "toy_pad" in r.perturbations)
    drifted = dataclasses.replace(record, stack=({**record.stack[0], "after": 2},))
    names = [d.perturbation for d in sensitivity([record, drifted])]
    assert names == ["toy_pad", "toy_pad", "toy_pad (drift)", "toy_pad (drift)"]


def test_the_json_holds_the_curves_and_the_failures_and_reads_them_back(report):
    failure = Failure(report.records[0], "outcome: wrong_answer\n  turn 1: answer 'no idea'")
    with_failure = Report(report.records, report.meta, failures=[failure])
    data = json.loads(with_failure.to_json())
    shout = [d for d in data["sensitivity"] if d["perturbation"] == "toy_shout"]
    assert [d["severity"] for d in shout] == [0, 1, 2, 3]
    assert all(d["low"] <= d["value"] <= d["high"] for d in shout) and shout[1]["tier"] == "perception"
    again = Report.from_dict(data)
    assert again.failures == [failure] and again.sensitivity() == report.sensitivity()


def test_the_page_holds_the_report_and_escapes_what_agents_say(report, tmp_path):
    hostile = "<script>alert(1)</script> & <img src=http://example.com/x.png>"
    record = next(r for r in report.records if not r.success)
    failure = Failure(record, f"outcome: {record.outcome}\n  turn 1: answer {hostile!r}")
    page_report = Report(report.records, {**report.meta, "agent": hostile}, failures=[failure])
    baseline = Report(report.records, report.meta)
    result = check(page_report, "clean.success>=0.9 perception.success>=0.9") + compare(page_report, baseline)
    path = write_html(page_report, tmp_path / "out" / "report.html", result, baseline, figures=False)
    text = path.read_text()
    tags = _tags(text)
    assert {"script", "link", "iframe", "object", "embed"}.isdisjoint(t for t, _ in tags) and "&lt;script&gt;" in text
    sources = [v for _, attrs in tags for k, v in attrs if k in ("src", "href")]
    assert all(v.startswith(("data:", "#")) for v in sources), f"nothing loads from elsewhere: {sources}"
    perception = report.row("perception")
    assert f'data-scope="perception" data-metric="success" data-value="{perception.perturbed.value:.6f}"' in text
    assert text.count('data-verdict="FAIL"') >= 1 and "perception.success&gt;=0.9" in text
    assert 'id="baseline"' in text and text.count("baseline clean") == 1
    assert f"<code>{record.test}</code>" in text and "toy_shout(s=" in text
    order = [m for m in re.findall(r'<section id="(\w+)"', text)]
    known = ("summary", "gate", "baseline", "tiers", "cost", "sensitivity", "failures")
    assert order == [k for k in known if k in order]
    assert order[:4] == ["summary", "gate", "baseline", "tiers"]


def _tags(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    from html.parser import HTMLParser

    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, attrs))

    Tags().feed(text)
    return tags


def test_a_section_added_to_the_list_is_on_the_page(report):
    extra = ("worst", lambda page: f'<section id="worst">{len(page.report.records)} cases</section>')
    SECTIONS.insert(1, extra)
    try:
        text = render(Page(report, figures=False))
    finally:
        SECTIONS.remove(extra)
    assert text.index('id="summary"') < text.index('id="worst"') < text.index('id="tiers"')
    assert f'<section id="worst">{len(report.records)} cases</section>' in text


def test_the_figures_are_inlined_pngs(report, tmp_path):
    pytest.importorskip("matplotlib")
    from sandbox.evaluation.figures import write_plot

    text = render(Page(report))
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 2
    assert write_plot(report, tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert write_plot(Report([]), tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
