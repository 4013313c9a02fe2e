"""Waiting on a child process as a loaded machine needs: a hang is a process tree that stops using CPU, never one
that is slow. A fixed wall-clock budget sized for an idle machine fails a test from load alone."""

from __future__ import annotations

import contextlib
import subprocess
import time

import psutil  # counts the CPU of a process's children and grandchildren, which /proc/PID/stat alone does not

STALL_S = 120.0  # seconds with no CPU used by the whole tree: hung, however loaded the machine is
POLL_S = 1.0


def cpu_seconds(pid: int) -> float:
    """CPU seconds used by ``pid``, its children that ended, and the descendants that still run."""
    try:
        process = psutil.Process(pid)
        own = process.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for child in process.children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total
    except psutil.Error:
        return 0.0


def communicate(process: subprocess.Popen, stall: float = STALL_S) -> tuple[str, str]:
    """``process.communicate()`` that waits as long as the process tree keeps using CPU; ``stall`` seconds without
    any is a hang: the tree is killed and the test fails with what the process wrote."""
    seen, since = cpu_seconds(process.pid), time.monotonic()
    while True:
        try:
            return process.communicate(timeout=POLL_S)  # retrying after TimeoutExpired loses no output
        except subprocess.TimeoutExpired:
            now = cpu_seconds(process.pid)
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since > stall:
                _kill_tree(process)
                out, err = process.communicate()
                raise AssertionError(
                    f"{process.args!r} used no CPU for {stall:g} s: hung, killed\n"
                    f"stdout: {(out or '')[-2000:]}\nstderr: {(err or '')[-2000:]}"
                ) from None


def run(argv: list[str], stall: float = STALL_S, **popen) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True, **popen)`` waited on by :func:`communicate`."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    out, err = communicate(process, stall)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def _kill_tree(process: subprocess.Popen) -> None:
    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        children = []
    for each in children:
        with contextlib.suppress(psutil.Error):
            each.kill()
    process.kill()
