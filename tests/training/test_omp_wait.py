"""Generation leaves OpenMP's wait policy alone (it times its thread count instead, ``training.inference.threads``);
a training process sets a passive policy for itself only, not for the processes it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, **env: str) -> list:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    clean["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_importing_inference_sets_no_wait_policy():
    assert run("import os, json, training.inference; print(json.dumps([os.environ.get('OMP_WAIT_POLICY')]))") == [None]


def test_a_training_process_keeps_its_passive_policy_to_itself():
    code = (
        "import os, json; from training import cpu; cpu.prepare(); child = cpu.child_environment(); "
        "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), child.get('OMP_WAIT_POLICY'), 'PATH' in child]))"
    )
    assert run(code) == ["PASSIVE", None, True]
    assert run(code, OMP_WAIT_POLICY="ACTIVE") == ["ACTIVE", "ACTIVE", True]  # the user's own setting is passed on
