"""The HTML report in a real browser: headless Chromium loads the page offline, and the numbers in its DOM are
the report's (the JSON's rows, dose-response points and gate verdicts)."""

import json
import shutil
from html.parser import HTMLParser

import pytest

from sandbox.evaluation import check, evaluate
from sandbox.evaluation.html_report import write_html
from tests import toys
from tests.processes import run

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
)  # fmt: skip


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no browser to render the HTML report in ({', '.join(BROWSERS)} not on PATH; CI installs Debian's "
                "chromium in .ci/run: apt-get install -y chromium)")  # fmt: skip


class _Cells(HTMLParser):
    """The text of each element that carries a figure (``data-metric``, ``data-verdict``), with its attributes,
    and the tags seen."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[dict[str, str], str]] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._open: list[tuple[str, dict[str, str], list[str]]] = []

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if "data-metric" in attributes or "data-verdict" in attributes:
            self._open.append((tag, attributes, []))

    def handle_data(self, data):
        for _, _, parts in self._open:
            parts.append(data)

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            _, attributes, parts = self._open.pop()
            self.cells.append((attributes, " ".join("".join(parts).split())))


def _rate_text(rate: dict) -> str:
    if rate["n"] == 0:
        return "-"
    return f"{100 * rate['value']:.1f}% [{100 * rate['low']:.1f}%, {100 * rate['high']:.1f}%] ({rate['k']}/{rate['n']})"


def test_chromium_renders_the_page_and_its_numbers_are_the_reports(tmp_path):
    browser = _browser()
    toys.register_toys()
    try:
        report = evaluate(toys.Fragile(), names=["toy_shout", "toy_pad"], n=12, cache_dir=None)
    finally:
        toys.unregister_toys()
    gate = check(report, "clean.success>=0.5 perception.success>=0.99")
    figures = _has_matplotlib()
    page = write_html(report, tmp_path / "report.html", gate, figures=figures)
    data = json.loads(report.to_json())
    command = [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    done = run(command)
    assert done.returncode == 0, done.stderr[-2000:]

    dom = _Cells()
    dom.feed(done.stdout)
    assert [a.get("id") for t, a in dom.tags if t == "section"][:3] == ["summary", "gate", "tiers"]
    shown = {(a.get("data-scope"), a["data-metric"]): text for a, text in dom.cells if "data-metric" in a}
    metrics = ("clean", "success", "tool_errors", "refusal", "wrong_refusal", "repeated_write", "fails_clean")
    compared = 0
    for row in data["rows"]:
        for metric in metrics:
            if row["kind"] == "clean" and metric == "success":
                continue
            assert shown[row["scope"], metric] == _rate_text(row[metric]), (row["scope"], metric)
            compared += 1
        assert shown[row["scope"], "episodes"] == str(row["episodes"])
        if row["kind"] != "clean":
            delta = row["delta"]
            expected = f"{delta['points']:+.1f} [{delta['low']:+.1f}, {delta['high']:+.1f}]"
            assert shown[row["scope"], "delta"] == expected, row["scope"]
    for point in data["sensitivity"]:
        assert shown[point["perturbation"], f"severity_{point['severity']}"] == _rate_text(point)
        compared += 1
    assert compared > 40
    verdicts = [a["data-verdict"] for a, _ in dom.cells if "data-verdict" in a]
    assert verdicts == [gate.verdict, *[c.verdict for c in gate.checks]] == ["FAIL", "PASS", "FAIL"]
    images = [a["src"] for t, a in dom.tags if t == "img"]
    assert len(images) == (2 if figures else 0) and all(src.startswith("data:image/png;base64,") for src in images)


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None
