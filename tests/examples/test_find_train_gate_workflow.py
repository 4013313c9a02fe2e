"""The find → train → gate workflow in examples/ci_gate: valid YAML of the GitHub Actions shape, every
``openagent`` command in it parsed by this version's command line, every pytest option one the plugin has, every
path it names present; and the steps in the loop's order."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci_gate" / "find-train-gate.yml"


def _workflow() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(WORKFLOW.read_text())


def _commands() -> list[list[str]]:
    steps = _workflow()["jobs"]["find-train-gate"]["steps"]
    commands = []
    for step in steps:
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            if line.strip():
                words = shlex.split(line.replace("$CHECKPOINT", "runs/ci_gate/sft"))
                commands.append(words)
    return commands


def test_the_workflow_is_a_github_actions_job_with_the_loops_steps_in_order():
    workflow = _workflow()
    assert workflow["name"] == "find-train-gate" and True in workflow  # YAML reads `on:` as True
    steps = workflow["jobs"]["find-train-gate"]["steps"]
    names = [s.get("name", s.get("uses")) for s in steps]
    order = ["gate the checkpoint (find)", "turn the failures into PAFT rows", "train PAFT on them from the same "
             "checkpoint", "gate PAFT on a fresh sample"]  # fmt: skip
    assert [n for n in names if n in order] == order
    for step in steps:
        if step.get("name") in order[1:]:
            assert step["if"] == "steps.find.outcome == 'failure'"


def test_every_openagent_command_parses_and_every_pytest_option_and_path_exists():
    from pytest_openagent.cli import build_parser
    from pytest_openagent.options import HELP

    parser = build_parser()
    seen = set()
    for words in _commands():
        if words[0] == "openagent":
            parser.parse_args(words[1:])  # an option this version lacks exits 2 here
            seen.add(" ".join(words[1:3]))
        elif words[0] == "pytest":
            options = [w.split("=")[0] for w in words if w.startswith("--openagent-")]
            assert options and set(options) <= set(HELP), options
            assert (ROOT / words[1]).is_dir() and (ROOT / words[words.index("-c") + 1]).is_file()
            seen.add("pytest")
    assert seen == {"data from-report", "train paft", "pytest"}
