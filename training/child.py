"""Training runs and pytest sessions in child processes, their output relayed line by line as it comes.

The demo trains each model in a process of its own: a fresh process trained the same steps faster than the demo's
after the SFT had trained there, and hands its memory back when it ends (docs/experiments.md). A child is
``python -m training.child SPEC``: the run's options and the precision timings this process already measured for
its model, so that it does not time them again. Two runs can train side by side, a thread each
(:func:`side_by_side`), on the CPU a training step of a small model leaves idle. A child ends with its parent, so
that a killed demo leaves no run training on into the folder its rerun resumes.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from training import cpu, memory

HEARTBEAT = 30.0
"""Seconds of silence from the children after which the parent says they are still running."""
PR_SET_PDEATHSIG = 1  # linux/prctl.h
MEMORY_MARGIN = 1.25
"""Runs train side by side only where the machine has this much more memory available than their peaks."""


def relay_all(
    commands: Sequence[Sequence[str]], line: Callable[[int, str], None], quiet: Callable[[float], None],
    cwd: Path | None = None,
) -> list[int]:  # fmt: skip
    """Run ``python -u ARGV`` (this interpreter) for each of ``commands`` at once, each line they print (stdout
    and stderr) given to ``line`` with its command's index as it comes, ``quiet`` told the seconds so far after
    each :data:`HEARTBEAT` of silence; their exit codes. The children are killed if this process is interrupted
    while they run."""
    lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
    processes = []
    try:
        for index, argv in enumerate(commands):
            process = subprocess.Popen(
                [sys.executable, "-u", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                cwd=cwd, bufsize=1, env=cpu.child_environment(), preexec_fn=_end_with(os.getpid()),
            )  # fmt: skip
            processes.append(process)
            threading.Thread(target=_pump, args=(index, process.stdout, lines), daemon=True).start()
        start, running = time.perf_counter(), len(processes)
        while running:
            try:
                index, text = lines.get(timeout=HEARTBEAT)
            except queue.Empty:
                quiet(time.perf_counter() - start)
                continue
            if text is None:
                running -= 1
            else:
                line(index, text.rstrip("\n"))
    except BaseException:
        for process in processes:
            process.kill()
        raise
    finally:
        for process in processes:
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
    return [process.returncode for process in processes]


def relay(argv: Sequence[str], line: Callable[[str], None], quiet: Callable[[float], None],
          cwd: Path | None = None) -> int:  # fmt: skip
    """:func:`relay_all` for one command: its exit code."""
    return relay_all([argv], lambda _, text: line(text), quiet, cwd)[0]


def _end_with(parent: int) -> Callable[[], None] | None:
    """What a child runs before its program so that it ends when ``parent`` does, killed or not, instead of
    training on into the folder a rerun resumes (Linux: ``PR_SET_PDEATHSIG``); ``None`` without glibc."""
    libc = cpu.glibc()
    if libc is None:
        return None

    def end_with_parent() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # it ended before the line above
            os._exit(1)

    return end_with_parent


def _pump(index: int, stream: Any, lines: queue.Queue) -> None:
    for text in stream:
        lines.put((index, text))
    lines.put((index, None))


def side_by_side(runs: int, peak_bytes: int | None) -> tuple[int, str]:
    """The CPU threads each of ``runs`` training runs gets when they train at once, each expected to peak at
    ``peak_bytes`` of memory, and why in words; 0 threads where they should train one after the other: fewer CPUs
    than runs, less memory available than their peaks with :data:`MEMORY_MARGIN` (or either unknown), or a GPU
    (whose memory this does not weigh)."""
    import torch

    if torch.cuda.is_available():
        return 0, "they train on the GPU"
    cpus, available = cpu.available_cpus(), memory.available_bytes()
    if runs < 2 or cpus < runs:
        return 0, f"{cpus} CPU{'s' * (cpus != 1)} for {runs} run{'s' * (runs != 1)}"
    if peak_bytes is None or available is None:
        return 0, "the memory they need or the memory available is not known"
    need = MEMORY_MARGIN * runs * peak_bytes
    gib = lambda n: f"{n / 2**30:.1f} GiB"
    why = f"{runs} runs of about {gib(peak_bytes)} each need {gib(need)} with a margin; {gib(available)} available"
    return (cpus // runs if available >= need else 0), why


def train(runs: Sequence[tuple[str, Any]], say: Callable[[str], None]) -> list[Path]:
    """Train the SFT runs ``(label, SFTConfig)`` at once, each in a child process, their output shown as the runs'
    own (each line after its run's label where there are several); the runs' folders. A child that fails raises a
    ``RuntimeError`` once all have ended (its traceback was shown)."""
    from training import precision

    timings = precision.measured()
    commands = [
        ["-m", "training.child", json.dumps({"config": cfg.to_dict(), "precision": timings})] for _, cfg in runs
    ]
    labels = [label for label, _ in runs]

    def line(index: int, text: str) -> None:
        print(f"{labels[index]} | {text}" if len(runs) > 1 else text, file=sys.stderr, flush=True)

    codes = relay_all(commands, line, lambda seconds: say(f"{', '.join(labels)}: training, {seconds:.0f} s"))
    failed = [f"{label} exited {code}" for label, code in zip(labels, codes, strict=True) if code != 0]
    if failed:
        raise RuntimeError(f"the training process of {', '.join(failed)} (its output is above)")
    return [Path(cfg.out) for _, cfg in runs]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m training.child SPEC``: train the SFT run SPEC names (JSON: ``config``, ``precision``)."""
    cpu.prepare()  # before torch loads: OpenMP reads its wait policy once
    from training import precision
    from training.config import SFTConfig
    from training.sft import train as train_sft

    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    precision.remember(spec["precision"])
    train_sft(SFTConfig(**spec["config"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
