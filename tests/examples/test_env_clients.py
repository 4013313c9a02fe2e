"""The client scripts in examples/openenv_client and examples/verifiers_client (run in venvs of their own: OpenEnv's
and verifiers' packages do not install beside the project's ``mcp``): valid Python, and the documented episode they
play (docs/training-at-scale.md) still the oracle's under the renamed tools, ending in a success."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "examples" / "openenv_client" / "drive.py", ROOT / "examples" / "verifiers_client" / "drive.py"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.parent.name)
def test_the_client_script_compiles(script):
    compile(script.read_text(), str(script), "exec")


def test_the_documented_episode_is_the_oracles_under_the_renamed_tools():
    import sandbox
    from sandbox.evaluation.train_draw import train_case

    docs = (ROOT / "docs" / "training-at-scale.md").read_text()
    command = re.search(r"drive\.py --url \S+ \\\n(.*?)\n```", docs, re.S)
    assert command, "the documented drive.py command with --task is gone from docs/training-at-scale.md"
    words = shlex.split(command.group(1).replace("\\\n", " "))
    option = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i] in ("--task", "--stack", "--answer")}
    calls = [(words[i + 1], json.loads(words[i + 2])) for i, w in enumerate(words) if w == "--call"]
    case = train_case("poi", {"task": option["--task"], "stack": [option["--stack"]]})
    episode = case.run(sandbox.OracleAgent())
    assert [(c.name, c.arguments) for step in episode.steps for c in step.calls] == calls
    assert episode.outcome == "success" and episode.answer.split()[-1] in option["--answer"]
