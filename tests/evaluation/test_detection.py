"""Detection apart from recovery: per tier and perturbation, noticed / recovered / went on, in the report, its JSON
and its HTML page."""

from __future__ import annotations

import json

from sandbox.evaluation.html_report import Page, render
from sandbox.evaluation.report import Record, Report


def _record(name: str, noticed: bool | None, success: bool, task: str) -> Record:
    return Record(test="t", agent="a", case=f"{task}:{name}", label=name, task=task, family="f", n_calls=2,
                  perturbations=(name,), tier="interaction", solvable=True, outcome="success" if success else "x",
                  success=success, tool_errors=0, calls=2, clean_outcome="success", clean_success=True,
                  clean_solvable=True, clean_tool_errors=0, clean_calls=2,
                  stack=({"name": name, "severity": 1, "pool": "eval", "seed": 0},), noticed=noticed)  # fmt: skip


def test_noticed_recovered_and_went_on_are_counted_apart():
    records = [_record("model_empty_reply", True, True, "a"), _record("model_empty_reply", True, False, "b"),
               _record("model_false_success", False, False, "a"),
               _record("tool_name_noise", None, False, "a")]  # fmt: skip
    report = Report(records, {"agent": "a"})
    rows = {(d.kind, d.name): d for d in report.detection()}
    assert set(rows) == {("tier", "interaction"), ("perturbation", "model_empty_reply"),
                         ("perturbation", "model_false_success")}  # fmt: skip
    empty = rows["perturbation", "model_empty_reply"]
    assert (empty.noticed.k, empty.recovered.k, empty.went_on.k, empty.noticed.n) == (2, 1, 0, 2)
    tier = rows["tier", "interaction"]
    assert (tier.noticed.k, tier.recovered.k, tier.went_on.k, tier.noticed.n) == (2, 1, 1, 3)
    data = json.loads(report.to_json())
    assert data["detection"][0]["name"] == "interaction"
    assert {r.noticed for r in Report.from_dict(data).records} == {True, False, None}
    page = render(Page(report, figures=False))
    assert 'data-scope="model_false_success" data-metric="went_on" data-value="1.000000"' in page


def test_a_report_without_scored_faults_has_no_detection():
    report = Report([_record("tool_name_noise", None, True, "a")], {"agent": "a"})
    assert report.detection() == [] and "detection" not in json.loads(report.to_json())
    assert 'id="detection"' not in render(Page(report, figures=False))
