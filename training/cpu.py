"""How a training process uses the CPU: torch's threads and how OpenMP's idle threads wait.

On a machine that others share, a training step should cost in proportion to the CPU it gets. Two
things break that. OpenMP threads that finish their share of an operation spin while they wait for
the others, burning the time slices they hold; and a thread count above the CPUs this process may
run on (a container's quota, a ``taskset``) makes every operation wait for a thread that has no CPU.

``OPENAGENT_CPU_POLICY`` names the policy:

- ``shared`` (the default): as many threads as the CPUs the process may run on (its affinity mask,
  capped by its cgroup's CPU quota), idle OpenMP threads that sleep at once
  (``OMP_WAIT_POLICY=PASSIVE``, ``KMP_BLOCKTIME=0``, set before torch loads; values already in the
  environment win), and freed memory kept for the next step (:func:`keep_freed_memory`).
- ``torch``: torch's defaults (the policy before ``shared``), kept for comparison
  (``benchmarks/bench_contention.py``).

A run's explicit ``threads`` wins over both. It is chosen afresh at every start and recorded per segment of
the run, because the thread count changes a step's rounding where the kernels split their sums among the
threads: each count gives the same numbers every time, but a resumed run on another count continues the same
training up to that rounding, not bit for bit (docs/experiments.md: SmolLM2-135M's gradients at one thread
against two, 6e-7 apart in fp32 and 2% in bf16 autocast; the tiny test models' matrices are too small to split).
"""

from __future__ import annotations

import functools
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.errors import UsageError

POLICY_ENV = "OPENAGENT_CPU_POLICY"
POLICIES = ("shared", "torch")
PASSIVE_WAIT = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
"""GNU OpenMP (torch's Linux wheels) reads the first, Intel's the second; each ignores the other."""
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
KEEP_BYTES = 1 << 30
"""Blocks up to this size come from malloc's heap and stay there once freed (glibc's default: 128 KiB, adapted
up to 32 MiB)."""

_wait: str | None = None
"""How this process's OpenMP threads wait, as fixed when torch loaded (``None`` before :func:`prepare`)."""
_set: list[str] = []
"""The variables :func:`prepare` set in the environment for this process's own OpenMP."""


def policy() -> str:
    """The policy ``OPENAGENT_CPU_POLICY`` names (``shared`` if unset); a :class:`UsageError` for another value."""
    value = os.environ.get(POLICY_ENV, "").strip() or "shared"
    if value not in POLICIES:
        raise UsageError(f"{POLICY_ENV}={value!r}: expected one of {', '.join(POLICIES)} (unset: shared)")
    return value


def prepare() -> str:
    """Set OpenMP's wait policy for this process if torch has not loaded yet (OpenMP reads it once, when torch
    loads): call it before anything imports torch. How the threads wait, in words."""
    global _wait
    chosen = policy()
    if _wait is not None:
        return _wait
    env = os.environ.get("OMP_WAIT_POLICY")
    if "torch" in sys.modules:
        _wait = f"OMP_WAIT_POLICY={env}" if env else "OpenMP's default (torch had loaded before training began)"
    elif chosen == "shared":
        for key, value in PASSIVE_WAIT.items():
            if key not in os.environ:
                os.environ[key] = value
                _set.append(key)
        keep_freed_memory()
        _wait = "passive" if os.environ["OMP_WAIT_POLICY"].upper() == "PASSIVE" else f"OMP_WAIT_POLICY={env}"
    else:
        _wait = f"OMP_WAIT_POLICY={env}" if env else "OpenMP's default"
    return _wait


def child_environment() -> dict[str, str]:
    """This process's environment without the wait policy :func:`prepare` set for its own training: a child that
    generates with a model (the demo's pytest session) does better choosing its own threads
    (``training.inference.threads``) with OpenMP's default, which sleeping threads slow down on idle cores."""
    return {key: value for key, value in os.environ.items() if key not in _set}


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed blocks for reuse instead of handing each large one back to the kernel: a
    training step frees and reallocates its activations (hundreds of MB) every step, and returning them costs a
    page fault per 4 KiB at the next step (``benchmarks/bench_malloc.py`` measures it). Whether it was set (glibc
    on Linux only)."""
    libc = glibc()
    if libc is None:
        return False  # another C library (musl) or system: its own policy stands
    return bool(libc.mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, 2 * KEEP_BYTES))


def release_freed_memory() -> bool:
    """Hand back to the kernel the freed memory :func:`keep_freed_memory` lets malloc keep (``malloc_trim``): for a
    process done with training that goes on running, as the demo does after its probe (1.8 of 2.2 GiB there).
    Whether it could (glibc on Linux only)."""
    import gc

    libc = glibc()
    if libc is None:
        return False
    gc.collect()
    return bool(libc.malloc_trim(0))


@functools.cache
def glibc() -> Any:
    """Linux's C library through ``ctypes`` (``mallopt``, ``malloc_trim``, ``prctl``), or ``None`` where this
    process has none (another system, or musl, which lacks those)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask, capped by its cgroup's CPU quota (rounded up)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


@dataclass(frozen=True)
class CpuUse:
    """What a training process computes with on the CPU."""

    threads: int
    cpus: int
    wait: str
    policy: str

    def describe(self) -> str:
        return (
            f"{self.threads} CPU thread{'s' * (self.threads != 1)} ({self.cpus} CPUs available, "
            f"{POLICY_ENV}={self.policy}), OpenMP waits: {self.wait}"
        )


def configure(threads: int = 0) -> CpuUse:
    """Set torch's intra-op threads: ``threads`` if given, else the policy's choice. What the process now uses."""
    wait = prepare()
    import torch

    chosen = policy()
    cpus = available_cpus()
    if threads > 0:
        torch.set_num_threads(threads)
    elif chosen == "shared":
        torch.set_num_threads(cpus)
    return CpuUse(torch.get_num_threads(), cpus, wait, chosen)
