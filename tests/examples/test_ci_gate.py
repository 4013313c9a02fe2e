"""The CI-gate example, run as its script runs it, with agents standing in for trained checkpoints.

The oracle stands in for a robust checkpoint and the static baseline (it solves the clean world
and nothing else) for a brittle one, so the example's suite and gate run in seconds.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ci_gate"


def _script():
    spec = importlib.util.spec_from_file_location("train_and_gate", EXAMPLE / "train_and_gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_robust_agent_passes_the_gate_and_a_brittle_one_fails_it_per_criterion(tmp_path, capsys):
    assert _script().main(["--agents", "oracle", "static", "--work", str(tmp_path)]) == 1  # the job fails
    out = capsys.readouterr().out
    robust, brittle = out.split("agent=static")
    assert "openagent gate PASS (4 checks)" in robust
    gate = brittle.split("openagent gate FAIL")[1]
    assert re.search(r"\n  FAIL +perception\.delta>=-25: measured -\d+\.\d points", gate)
    assert re.search(r"\n  FAIL +internalization\.refusal>=0\.5: measured 0\.\d{3}", gate)
    assert re.search(r"\n  PASS +clean\.success>=0\.6", gate)  # it solves the clean world: that criterion holds
    assert "4 passed" in brittle  # no test failed: the gate alone fails the job
    assert out.rstrip().endswith("oracle: passed\nstatic: FAILED (pytest exit code 1)")


def test_the_job_exits_0_when_every_agent_passes_and_2_on_misuse(tmp_path, capsys):
    script = _script()
    assert script.main(["--agents", "oracle", "--work", str(tmp_path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("oracle: passed")
    assert script.main(["--agents", "nonsense:spec", "--work", str(tmp_path)]) == 2  # no verdict: not a failed gate
    assert "nonsense:spec: NOT GATED: misuse (pytest exit code 4)" in capsys.readouterr().out


def test_misuse_outranks_a_failed_gate_which_outranks_a_pass():
    verdict = _script().verdict
    assert (verdict([0, 0]), verdict([0, 1]), verdict([1, 4]), verdict([0, 5]), verdict([])) == (0, 1, 2, 2, 0)
