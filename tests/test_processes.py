"""A child process is waited on while its tree uses CPU: slow is waited for, hung is killed."""

from __future__ import annotations

import sys

import pytest

from tests.processes import run


def test_a_busy_process_is_waited_for_past_the_stall_window():
    busy = "import time\nend = time.process_time() + 6\nwhile time.process_time() < end: pass\nprint('done')"
    done = run([sys.executable, "-c", busy], stall=2)
    assert done.returncode == 0 and done.stdout.strip() == "done"


def test_a_grandchild_using_cpu_keeps_the_tree_alive():
    busy = "import time\nend = time.process_time() + 6\nwhile time.process_time() < end: pass"
    parent = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {busy!r}])\nprint('done')"
    done = run([sys.executable, "-c", parent], stall=2)
    assert done.stdout.strip() == "done"


def test_a_process_that_uses_no_cpu_is_killed_as_hung():
    with pytest.raises(AssertionError, match="used no CPU for 2 s: hung, killed") as failure:
        run([sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(600)"], stall=2)
    assert "waiting" in str(failure.value)
