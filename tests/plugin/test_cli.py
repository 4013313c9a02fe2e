"""The openagent command: the table, the JSON report, the gate's exit codes, and its misuse."""

import json
import subprocess
import sys

import pytest

from pytest_openagent.cli import main


@pytest.mark.usefixtures("toy_perturbations")
def test_the_command_prints_the_table_writes_json_and_gates(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["eval", "--agent", "oracle", "--names", "toy_shout,toy_pad", "--n", "4", "--cache-dir", str(tmp_path)]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "perception" in printed and "Δ points" in printed and json.loads(out.read_text())["schema_version"] == 3
    assert main(argv) == 0
    assert "; 0 episodes run, " in capsys.readouterr().out  # the second run is served from the cache
    assert main([*argv[:-2], "--no-cache"]) == 0
    assert "shared by identical cases" in capsys.readouterr().out  # no cache: say what the reuse is
    assert main(["gate", str(out), "--gate", "perception.success>=0.5"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99"]) == 3  # 4 cases: inconclusive
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "pass"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "fail"]) == 1
    assert main(["gate", str(out), "--gate", "perception.episodes>=99"]) == 1
    assert "FAIL         perception.episodes>=99: measured 4 (n=4)" in capsys.readouterr().out
    assert main(["gate", str(out), "--baseline", str(out), "--max-regression", "100"]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval"], "the following arguments are required: --agent"),
        (["eval", "--agent", "oracel"], "Did you mean 'oracle'?"),
        (["gate", "nothing.json", "--gate", "all.success>=1"], "cannot read report 'nothing.json'"),
        (["gate", "r.json"], "give --gate CRITERIA, --baseline REPORT, or both"),
        (["gate", "r.json", "--baseline", "r.json", "--max-regression", "nan"], "the margin must be a number"),
        (["gate", "r.json", "--baseline", "r.json", "--max-regression", "-3"], "from 0 to 100"),
    ],
)
def test_command_misuse_exits_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_importing_the_plugin_loads_no_torch():
    code = "import sys, pytest_openagent, pytest_openagent.plugin, pytest_openagent.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_dead_agent_exits_4_naming_the_cause_not_a_table_of_zeros(capsys):
    assert main(["eval", "--agent", "tests.toys:Dead", "--tiers", "1", "--n", "8", "--no-cache"]) == 4
    captured = capsys.readouterr()
    assert "no measurement: the agent failed on 16 of 16 episodes" in captured.err and "Δ points" not in captured.out
