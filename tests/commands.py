"""The ``openagent`` command run as a user runs it: a subprocess in a folder of the user's.

``python -P`` leaves the current folder off ``sys.path``, as the installed ``openagent`` script does, so
that what the product itself puts on the path is what is tested. This checkout comes first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.processes import run

ROOT = Path(__file__).resolve().parents[1]


def openagent(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    environ = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-P", "-m", "pytest_openagent.cli", *argv]
    return run(command, cwd=cwd, env=environ)
