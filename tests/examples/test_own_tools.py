"""The own-tools example as a user runs it: pytest and openagent eval in its folder, on its bookshop."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.processes import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own_tools"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "worlds" / "bookshop.md"

BLIND = '''
"""Calls the gold plan by the clean tool names and reads the answer where the clean results hold it:
right on the clean bookshop, lost as soon as a tool is renamed."""
import json

from sandbox.agent import Briefed, Reply
from sandbox.computed import value


class Blind(Briefed):
    def act(self, turns):
        return [self.reply(t) for t in turns]

    def reply(self, turn):
        task = self.task_for(turn.episode_id)
        done = sum(1 for m in turn.messages if m.get("tool_calls"))
        waves = task.waves()
        if not task.solvable:
            return Reply(text="I cannot do that with these tools.")
        if done < len(waves):
            calls = [{"id": c.id, "function": {"name": c.tool, "arguments": c.args}} for c in waves[done]]
            return Reply(tool_calls=calls)
        seen = {m.get("tool_call_id"): m["content"] for m in turn.messages if m.get("role") == "tool"}
        values = []
        for key, source in task.sources.items():
            try:
                values.append(f"{key}: {value(source, {source.call: json.loads(seen.get(source.call, 'null'))})}")
            except ValueError:
                values.append(f"{key}: ?")
        return Reply(text="; ".join(values) or "Done.")
'''


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "own_tools"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".openagent_cache"))
    (project / "blind.py").write_text(BLIND)
    return project


def _run(project: Path, *argv: str) -> subprocess.CompletedProcess:
    return run([sys.executable, *argv], cwd=project)


def test_the_oracle_passes_the_examples_tests_and_gate(tmp_path):
    result = _run(_project(tmp_path), "-m", "pytest", "-q", "--openagent-agent", "oracle", "-p", "no:randomly")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout and "openagent gate PASS (3 checks)" in result.stdout
    assert "measurement: 20 cases per tier and their clean twins, seed 0, domain bookshop:SHOP" in result.stdout


def test_a_blind_agent_fails_and_its_failure_shrinks_to_one_perturbation(tmp_path):
    result = _run(_project(tmp_path), "-m", "pytest", "-q", "--openagent-agent", "blind:Blind", "-p", "no:randomly")
    assert result.returncode == 1, result.stdout[-3000:]
    out = result.stdout
    # A failure is printed in its section and, where pytest sees CI, again in the summary: one per test.
    shrunk = r"Failing test case: (test_\w+)\(\n.*agent=.*\n.*case=Case\((bookshop-.*)\),$"
    cases = dict(re.findall(shrunk, out, re.MULTILINE))
    assert len(cases) == 3, out[-3000:]  # the three tests that assert success each shrank a failure
    assert all(line.count("(s=") == 1 for line in cases.values()), cases  # to one perturbation, at one severity


def test_openagent_eval_takes_the_domain_by_module_attribute(tmp_path):
    project = _project(tmp_path)
    argv = ["-m", "pytest_openagent.cli", "eval", "--agent", "oracle", "--domain", "bookshop:SHOP", "--n", "8"]
    result = _run(project, *argv, "--gate", "interaction.delta>=-50")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "openagent gate PASS" in result.stdout and "interaction" in result.stdout


@pytest.fixture(scope="module")
def bookshop():
    from sandbox.domains import DOMAINS, register_domain

    spec = importlib.util.spec_from_file_location("bookshop_example", EXAMPLE / "bookshop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield register_domain(module.SHOP, replace=True)
    DOMAINS.pop("bookshop", None)


def test_every_case_of_the_bookshop_is_as_its_page_says(bookshop):
    """check_domain (``openagent check-domain``) with each pool and seeds 0-2: the oracle right on every case (a
    solvable case solved, an unsolvable one refused), and each row of docs/worlds/bookshop.md what it measures."""
    from sandbox.audits.check_domain import check_domain
    from sandbox.perturbations import POOLS

    rows: dict[str, Counter] = {}
    failures = []
    for pool in POOLS:
        for seed in range(3):
            found = check_domain(bookshop, seed=seed, pool=pool, cache_dir=None)
            failures += found.failures
            for cell in found.cells:
                row = rows.setdefault(cell.perturbation, Counter())
                row.update(applied=cell.applied, solvable=cell.solvable, oracle=cell.oracle_right,
                           static=cell.static_success)  # fmt: skip
    assert not failures, "\n\n".join(f.explain for f in failures[:2])
    tasks = bookshop.tasks()
    rows["(none)"] = Counter(applied=len(tasks), solvable=sum(t.solvable for t in tasks), oracle=found.oracle_clean,
                             static=found.static_clean)  # fmt: skip
    measured = {
        name: (str(r["applied"]), str(r["solvable"]), f"{r['oracle']}/{r['applied']}", f"{r['static']}/{r['applied']}")
        for name, r in rows.items()
        if r["applied"]
    }
    text = PAGE.read_text()
    table = re.findall(r"^\| \w+ \| `?([\w()]+)`? \| (\d+) \| (\d+) \| (\d+/\d+) \| (\d+/\d+) \|$", text, re.MULTILINE)
    page = {name: tuple(cells) for name, *cells in table}
    differ = set(page.items()) ^ set(measured.items())
    assert page == measured, f"docs/worlds/bookshop.md's table is not what runs now: {sorted(differ)}"
    assert f"{sum(r['applied'] for r in rows.values())} cases" in text
