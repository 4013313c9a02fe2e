"""The demo's plan and clock: the minutes each phase is expected to take on this CPU (a cost model fed by a short
measured probe), the minutes each took, peak memory, and where the time went when the machine was shared.

The cost model: a training step costs the tokens it computes divided by the training pass's tokens per
second, measured here on the base with its adapters in the precision training will use; an evaluated episode costs
:data:`EPISODE_STEPS` training steps' worth of that rate (generation re-reads the conversation each turn), an
episode of a property test (run alone, batch 1) :data:`SEARCH_EPISODE_STEPS`. The ratios were measured on 2-core
Xeons and EPYCs (docs/experiments.md) with checkpoints that solve most of their clean tasks: one that does not runs
its failing episodes to the step limit, and its gate takes longer than planned. A machine whose generation and
training differ in another ratio is off by that much, which the end of the run shows beside the plan.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from training import cpu, memory
from training.config import SFTConfig

EPISODE_STEPS = 0.12
"""Seconds of an evaluated episode (batched) per second of a training step of 8 short-family episodes: a gate
session's fixed measurement of SFT-50 (48 episodes) took about 85 s where a step took 14.8 (the default demo of
session 40)."""
SEARCH_EPISODE_STEPS = 0.2
"""Seconds of a property test's budgeted episode (one at a time, with Hypothesis' shrinking and the clean twin it
checks first) per second of such a step: 0.16 (bf16) and 0.23 (fp32) in session 46's default demos on an EPYC,
about 0.19 on a Xeon with AMX (the 0.075 of session 40 planned these gate sessions 25-30% short)."""
STEP_TOKENS = 6000
"""Tokens a training step of 8 short-family episodes computes (the shared prefix once, the rows packed)."""
PROBE_TO_STEP = {"bf16": 0.5, "fp32": 0.37}
"""A training step's seconds per token against the probe's (``training.precision``: a pass of the LoRA model on 512
random tokens, every position a label, no prefix shared), by the precision training uses. bf16: 0.51 in the default
demo of session 40, 0.48-0.55 in session 46's on a Xeon with AMX and an EPYC with AVX512-BF16; fp32: 0.37 on both
CPUs kept to AVX2, where fp32's matrix products gain more from a step's 6,000 packed tokens than from the probe's
512 (docs/experiments.md). Evaluation follows the probe in both precisions (:class:`Pace`)."""

SHARED = 0.15
"""The share of the machine's CPU time other processes may take before the run says it shared the machine."""

T = TypeVar("T")


@dataclass(frozen=True)
class Pace:
    """The cost model's units on this CPU, from the probe: a training step of 8 short-family episodes, and the unit
    evaluation is counted in (:data:`EPISODE_STEPS` and the like), that step at bf16's ratio to the probe. On one
    EPYC the gate session took 1.50× as long in fp32 as in bf16 where the probe ran 1.49× as slow, and a training
    step 1.16× (session 46): evaluation follows the probe in either precision, training does not."""

    train_step_s: float
    eval_step_s: float


@dataclass
class Phase:
    name: str
    expected_s: float
    measured_s: float | None = None
    note: str = ""


@dataclass
class Clock:
    """The demo's phases in order, each with its expected and measured seconds."""

    say: Callable[[str], None]
    phases: dict[str, Phase] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    cpu_started: float = field(default_factory=lambda: _cpu_seconds())
    machine_started: float | None = field(default_factory=lambda: machine_busy_seconds())
    side_by_side: dict[str, int] = field(default_factory=dict)
    """Phases whose runs trained at once: the sum of their peak memory, in bytes."""

    def plan(self, expected: dict[str, float]) -> None:
        for name, seconds in expected.items():
            self.phases.setdefault(name, Phase(name, seconds)).expected_s = seconds

    def show_plan(self, why: str) -> None:
        total = sum(p.expected_s for p in self.phases.values())
        self.say(f"plan ({why}): about {total / 60:.0f} min in all")
        for p in self.phases.values():
            if p.measured_s is None:
                self.say(f"  {p.name:<28} about {p.expected_s / 60:4.1f} min")

    def run(self, name: str, work: Callable[[], T], note: str = "") -> T:
        """Run one phase, timed; its expected time if the plan has none (a phase with nothing left to do)."""
        self.say(f"— {name} —")
        start = time.perf_counter()
        result = work()
        phase = self.phases.setdefault(name, Phase(name, 0.0))
        phase.measured_s = (phase.measured_s or 0.0) + time.perf_counter() - start
        phase.note = note
        planned = f" (planned {phase.expected_s / 60:.1f})" if phase.expected_s else ""
        load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        self.say(f"— {name}: {phase.measured_s / 60:.1f} min{planned}; {load} —")
        return result

    def scale(self, name: str, factor: float) -> float:
        """Multiply phase ``name``'s expected seconds by ``factor`` (the plan learnt how it will run); the new ones."""
        phase = self.phases.setdefault(name, Phase(name, 0.0))
        phase.expected_s *= factor
        return phase.expected_s

    def shift(self, source: str, target: str, share: float) -> None:
        """Move ``share`` of phase ``source``'s expected seconds to phase ``target`` (work the plan moved there)."""
        moved = self.phases[source].expected_s * share
        self.phases[source].expected_s -= moved
        self.phases.setdefault(target, Phase(target, 0.0)).expected_s += moved

    def together(self, name: str, peak_bytes: int) -> None:
        """Phase ``name`` ran processes at once that peaked at ``peak_bytes`` together (at most)."""
        self.side_by_side[name] = peak_bytes

    def report(self) -> str:
        """The plan beside what was measured, peak memory, load and the CPU share this run got."""
        wall = time.perf_counter() - self.started
        lines = ["time per phase (expected from the probe / measured):"]
        for p in self.phases.values():
            measured = "-" if p.measured_s is None else f"{p.measured_s / 60:.1f} min"
            expected = f"{p.expected_s / 60:4.1f} min" if p.expected_s else "  (before the plan)"
            lines.append(f"  {p.name:<28} {expected} / {measured}")
        lines.append(f"  {'total':<28} {sum(p.expected_s for p in self.phases.values()) / 60:4.1f} min / "
                     f"{wall / 60:.1f} min")  # fmt: skip
        peak = f"peak memory: {peak_rss_gib():.1f} GiB (this process or its largest child)"
        for name, together in self.side_by_side.items():
            peak += f"; {name}, side by side: at most {together / 2**30:.1f} GiB together"
        lines.append(peak)
        capacity = max(wall, 1e-9) * (os.cpu_count() or 1)
        own = _cpu_seconds() - self.cpu_started
        load = os.getloadavg()
        used = 100 * own / capacity
        line = (f"machine: {cpu_name()}{isa_limits()}, {os.cpu_count()} CPUs; load average at the end {load[0]:.1f} / "
                f"{load[1]:.1f} / {load[2]:.1f} (1/5/15 min); this run used {used:.0f}% of the CPUs")  # fmt: skip
        busy = machine_busy_seconds()
        if busy is None or self.machine_started is None:
            lines.append(line + " (what other processes used is not known here)")
            return "\n".join(lines)
        others = max(0.0, busy - self.machine_started - own) / capacity
        lines.append(line + f", other processes {100 * others:.0f}%")
        if others > SHARED:
            lines.append(
                "  the run shared the machine: other processes took a share of the CPUs, so phases ran longer "
                "than planned; alone it takes about the plan's time"
            )
        return "\n".join(lines)


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def machine_busy_seconds() -> float | None:
    """CPU seconds every process on the machine has run since boot (``/proc/stat``: all but idle and I/O wait), or
    ``None`` where there is no such file."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def peak_rss_gib() -> float:
    """The larger of this process's and its largest finished child's peak resident memory, in GiB."""
    return max(memory.peak_rss_bytes(), memory.peak_rss_bytes(children=True)) / 2**30


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


ISA_LIMITS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")
"""The variables that keep oneDNN, MKL and ATen's own kernels to an older instruction set than the CPU has
(``benchmarks/bench_isa.py`` runs the probe so limited)."""


def isa_limits() -> str:
    """`` (instruction sets limited: NAME=VALUE, ...)`` for the :data:`ISA_LIMITS` set here, else ``""``: a run so
    limited is not this CPU's figure."""
    limits = [f"{name}={os.environ[name]}" for name in ISA_LIMITS if os.environ.get(name)]
    return f" (instruction sets limited: {', '.join(limits)})" if limits else ""


def probe_pace(cfg: SFTConfig, say: Callable[[str], None]) -> tuple[Pace, str]:
    """The :class:`Pace` here, from the training passes that choose the precision (``training.precision``), timed on
    the model as the SFT of ``cfg`` will train it (its LoRA adapters): the training processes are given the
    measurement for their own choice. What was measured."""
    from training import precision
    from training.loop import load_model

    model, _ = load_model(cfg, Path(cfg.base))
    fp32, bf16 = precision.timings(model)
    use_bf16, _ = precision.choose(model)
    seconds = bf16 if use_bf16 else fp32
    rate = precision.PROBE_TOKENS / seconds
    del model
    cpu.release_freed_memory()  # the demo's process trains nothing more: its children get the memory
    name = "bf16" if use_bf16 else "fp32"
    pace = Pace(PROBE_TO_STEP[name] * STEP_TOKENS / rate, PROBE_TO_STEP["bf16"] * STEP_TOKENS / rate)
    return pace, f"a training pass of the base with its adapters ran {rate:.0f} tokens/s in {name}"
