"""The client scripts in examples/openenv_client, examples/verifiers_client and examples/nemogym_client (run in venvs
of their own: OpenEnv's, verifiers' and NeMo Gym's packages do not install beside the project's): valid Python, and
the documented episodes they play (docs/training-at-scale.md) still the oracle's under the renamed tools, ending in a
success."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCRIPTS = [EXAMPLES / "openenv_client" / "drive.py", EXAMPLES / "verifiers_client" / "drive.py",
           EXAMPLES / "verifiers_client" / "nemo_gym_taskset.py", EXAMPLES / "nemogym_client" / "drive.py"]  # fmt: skip


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
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


def test_the_documented_nemo_gym_row_is_played_as_the_oracle_plays_its_case(tmp_path):
    """The row the docs play (``--write-rows`` with the documented options, then ``--index``) is the case whose
    oracle makes the documented calls and answer."""
    import sandbox
    from pytest_openagent.commands.env_serve import write_rows
    from sandbox.evaluation.train_draw import train_case

    docs = (ROOT / "docs" / "training-at-scale.md").read_text()
    written = re.search(r"openagent env-serve poi --write-rows rows\.jsonl (--rows \d+ --tier \w+)\n", docs)
    command = re.search(r"nemogym_client/drive\.py --url \S+ (--rows .*?)\n```", docs, re.S)
    assert written and command, "the documented NeMo Gym commands are gone from docs/training-at-scale.md"
    options = shlex.split(written.group(1))
    words = shlex.split(command.group(1).replace("\\\n", " "))
    calls = [(words[i + 1], json.loads(words[i + 2])) for i, w in enumerate(words) if w == "--call"]
    count, tier = int(options[1]), options[3]
    write_rows("poi", tmp_path / "rows.jsonl", count, tier=tier)
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    row = rows[int(words[words.index("--index") + 1])]
    episode = train_case("poi", row["openagent_case"]).run(sandbox.OracleAgent())
    assert [(c.name, c.arguments) for step in episode.steps for c in step.calls] == calls
    assert {name for name, _ in calls} <= {t["name"] for t in row["responses_create_params"]["tools"]}
    assert episode.outcome == "success" and episode.answer == words[words.index("--answer") + 1]
