"""``training.inference`` sets OpenMP's wait policy to passive before torch loads, and only then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRINT = "import os; print(os.environ.get('OMP_WAIT_POLICY'))"


def policy(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    clean["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-c", f"{code}; {PRINT}"]
    done = subprocess.run(command, env={**clean, **env}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_passive_when_set_before_torch():
    assert policy("import training.inference") == "PASSIVE"


def test_the_users_setting_wins():
    assert policy("import training.inference", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
    assert policy("import training.inference", GOMP_SPINCOUNT="1000") == "None"


def test_untouched_once_torch_is_loaded():
    pytest.importorskip("torch")
    # OpenMP has read its environment by then: setting it would only mislead.
    assert policy("import torch; import training.inference") == "None"
