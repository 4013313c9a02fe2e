"""``openagent check-domain``: the oracle and the static baseline over every task, perturbation and severity."""

from __future__ import annotations

import json

import pytest

from pytest_openagent.cli import main
from sandbox.audits.check_domain import check_domain
from sandbox.audits.domain_matrix import DOC, matrix_markdown
from sandbox.domains import library
from sandbox.perturbations import registry
from sandbox.perturbations.registry import names
from tests import toys


@pytest.fixture
def unplug():
    registry.register(toys.ToyUnplug)
    yield toys.ToyUnplug.name
    registry._REGISTRY.pop(toys.ToyUnplug.name, None)


@pytest.fixture
def books():
    with library.registered():
        yield library.NAME


def test_a_sound_world_passes_with_every_perturbation_at_every_severity(books, tmp_path, capsys):
    out = tmp_path / "matrix.json"
    code = main(["check-domain", books, "--per-family", "1", "--no-cache", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    data = json.loads(out.read_text())
    tasks = len(library.FAMILIES)
    assert data["ok"] and data["tasks"] == tasks and data["oracle_clean"] == tasks and not data["failures"]
    expected = {(n, s) for n in names() for s in range(max(1, registry.get(n).min_severity),
                                                       registry.get(n).max_severity + 1)}  # fmt: skip
    assert {(c["perturbation"], c["severity"]) for c in data["cells"]} == expected
    for cell in data["cells"]:
        assert cell["applied"] + sum(cell["not_applied"].values()) == tasks, cell
        assert cell["oracle_solved"] == cell["solvable"] and cell["oracle_refused"] == cell["unsolvable"], cell
    transfer = next(c for c in data["cells"] if c["perturbation"] == "domain_transfer")
    assert transfer["applied"] == 0 and registry.get("domain_transfer").limits in transfer["not_applied"]
    assert set(data["static_per_tier"]) <= {"perception", "interaction", "reasoning", "internalization"}
    assert "OK: the oracle is right on every case" in text and "does not apply:" in text
    assert "domain_transfer (s=1: 5 of 5 tasks)" in text


def test_a_perturbation_that_breaks_the_oracle_fails_with_each_case_explained(books, unplug, tmp_path, capsys):
    out = tmp_path / "matrix.json"
    code = main(["check-domain", books, "--names", unplug, "--per-family", "1", "--no-cache", "--json", str(out),
                 "--show", "2"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 1, text
    data = json.loads(out.read_text())
    [cell] = data["cells"]
    assert cell["applied"] >= 3 and cell["oracle_refused"] == cell["unsolvable"]
    assert len(data["failures"]) == cell["solvable"] > 0 and cell["oracle_solved"] == 0
    assert text.count("oracle wrong (") == 2 and f"{len(data['failures']) - 2} more failing cases" in text
    assert "is gone for good" in text and "FAIL: the oracle is wrong" in text
    assert all(f["perturbation"] == unplug and "outcome:" in f["explain"] for f in data["failures"])


def test_episodes_come_from_the_cache_the_second_time(books, tmp_path):
    first = check_domain(books, names=["tool_name_noise"], per_family=1, cache_dir=tmp_path)
    again = check_domain(books, names=["tool_name_noise"], per_family=1, cache_dir=tmp_path)
    assert first.meta["episodes_run"] > 0 and again.meta["episodes_run"] == 0
    assert again.meta["episodes_cached"] == first.meta["episodes_run"]
    assert again.cells == first.cells


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nowhere"], "nowhere"),
        (["poi", "--names", "typos"], "typos"),
        (["poi", "--skip-tasks", "no-such-task"], "no-such-task"),
        (["poi", "--families", "nothing"], "nothing"),
        (["stdio:python -m server", "--tasks", "missing.jsonl"], "missing.jsonl"),
    ],
)
def test_misuse_exits_2_saying_what_was_wrong(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check-domain", *argv, "--no-cache"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_the_matrix_page_comes_from_the_same_code_on_a_slice():
    page = matrix_markdown(("library",), per_family=1)
    assert "python -m sandbox.audits.domain_matrix" in page
    for name in names():
        assert f"| `{name}` |" in page
    assert "| - | clean | 5 tasks, oracle 5/5, static 100% |" in page


@pytest.mark.slow
def test_the_matrix_page_is_current():
    assert DOC.read_text() == matrix_markdown(), "run: python -m sandbox.audits.domain_matrix"
