"""Training runs and pytest sessions in child processes, their output relayed line by line as it comes.

The demo trains each model (SFT, PAFT, RL) in a process of its own: a fresh process trained the same steps faster
than the demo's after the SFT had trained there, and hands its memory back when it ends (docs/experiments.md). A
child is ``python -m training.child SPEC``: the run's kind and options and the precision timings this process
already measured for its model, so that it does not time them again. Two runs can train side by side, a thread
each (:func:`side_by_side`), on the CPU a training step of a small model leaves idle. A child ends with its parent,
so that a killed demo leaves no run training on into the folder its rerun resumes.
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from training import cpu, memory

HEARTBEAT = 30.0
"""Seconds of silence from the children after which the parent says they are still running."""
PR_SET_PDEATHSIG = 1  # linux/prctl.h
MEMORY_MARGIN = 1.25
"""Runs train side by side only where the machine has this much more memory available than their peaks."""


class Command(NamedTuple):
    """A child to run: ``python -u ARGV`` (this interpreter) in ``cwd``, with ``env`` added to its environment; its
    lines shown under ``label``."""

    label: str
    argv: Sequence[str]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None


def relay_all(
    chains: Sequence[Sequence[Command]], line: Callable[[str, str], None], quiet: Callable[[float], None]
) -> list[list[int]]:  # fmt: skip
    """Run the commands of each of ``chains`` one after the other, the chains at once, each line a child prints
    (stdout and stderr) given to ``line`` with its command's label as it comes, ``quiet`` told the seconds so far
    after each :data:`HEARTBEAT` of silence; their exit codes, chain by chain. The children are killed if this
    process is interrupted while they run."""
    lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
    running: dict[int, subprocess.Popen] = {}  # chain -> its child now
    ended: list[list[int]] = [[] for _ in chains]

    def start(chain: int) -> None:
        command = chains[chain][len(ended[chain])]
        process = subprocess.Popen(
            [sys.executable, "-u", *command.argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=command.cwd, bufsize=1, env={**cpu.child_environment(), **(command.env or {})},
            preexec_fn=_end_with(os.getpid()),
        )  # fmt: skip
        running[chain] = process
        threading.Thread(target=_pump, args=(chain, process.stdout, lines), daemon=True).start()

    try:
        for chain, commands in enumerate(chains):
            if commands:
                start(chain)
        began = time.perf_counter()
        while running:
            try:
                chain, text = lines.get(timeout=HEARTBEAT)
            except queue.Empty:
                quiet(time.perf_counter() - began)
                continue
            if text is not None:
                line(chains[chain][len(ended[chain])].label, text.rstrip("\n"))
                continue
            process = running.pop(chain)
            ended[chain].append(_reap(process))
            if len(ended[chain]) < len(chains[chain]):
                start(chain)
    except BaseException:
        for process in running.values():
            process.kill()
        for process in running.values():
            _reap(process)
        raise
    return ended


def _reap(process: subprocess.Popen) -> int:
    """Wait for ``process`` to end; its exit code."""
    code = process.wait()
    if process.stdout is not None:
        process.stdout.close()
    return code


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


def side_by_side(runs: int, peak_bytes: int | None, share_cpus: bool = False) -> tuple[int, str]:
    """The CPU threads each of ``runs`` processes gets when they run at once, each expected to peak at
    ``peak_bytes`` of memory, and why in words; 0 threads where they should run one after the other: fewer CPUs
    than runs (with ``share_cpus``, than two: more runs than CPUs go at once, a thread each), less memory available
    than their peaks with :data:`MEMORY_MARGIN` (or either unknown), or a GPU (whose memory this does not weigh)."""
    import torch

    if torch.cuda.is_available():
        return 0, "they run on the GPU"
    cpus, available = cpu.available_cpus(), memory.available_bytes()
    if runs < 2 or cpus < (2 if share_cpus else runs):
        return 0, f"{cpus} CPU{'s' * (cpus != 1)} for {runs} run{'s' * (runs != 1)}"
    if peak_bytes is None or available is None:
        return 0, "the memory they need or the memory available is not known"
    need = MEMORY_MARGIN * runs * peak_bytes
    gib = lambda n: f"{n / 2**30:.1f} GiB"
    why = f"{runs} runs of about {gib(peak_bytes)} each need {gib(need)} with a margin; {gib(available)} available"
    return (max(1, cpus // runs) if available >= need else 0), why


def training(label: str, cfg: Any) -> Command:
    """The child that trains ``cfg`` (an SFT or PAFT run's :class:`~training.config.SFTConfig`, an RL run's
    :class:`~training.config.RLConfig`), given the precision timings this process measured."""
    from training import precision
    from training.config import RLConfig

    kind = "rl" if isinstance(cfg, RLConfig) else "sft"
    spec = {"kind": kind, "config": cfg.to_dict(), "precision": precision.measured()}
    return Command(label, ["-m", "training.child", json.dumps(spec)])


def train(runs: Sequence[tuple[str, Any]], say: Callable[[str], None]) -> list[Path]:
    """Train the runs ``(label, SFTConfig or RLConfig)`` at once, each in a child process (:func:`training`), their
    output shown as the runs' own (each line after its run's label where there are several); the runs' folders. A
    child that fails raises a ``RuntimeError`` once all have ended (its traceback was shown)."""
    labels = [label for label, _ in runs]
    chains = [[training(label, cfg)] for label, cfg in runs]
    ended = relay_all(chains, labelled(len(runs) > 1), lambda s: say(f"{', '.join(labels)}: training, {s:.0f} s"))
    check_trained([(label, codes[0]) for label, codes in zip(labels, ended, strict=True)])
    return [Path(cfg.out) for _, cfg in runs]


def labelled(several: bool) -> Callable[[str, str], None]:
    """Show a child's line on stderr, after its command's label where ``several`` children run."""
    return lambda label, text: print(f"{label} | {text}" if several else text, file=sys.stderr, flush=True)


def check_trained(ended: Sequence[tuple[str, int]]) -> None:
    """A ``RuntimeError`` naming the training runs ``(label, exit code)`` whose child failed, if any."""
    failed = [f"{label} exited {code}" for label, code in ended if code != 0]
    if failed:
        raise RuntimeError(f"the training process of {', '.join(failed)} (its output is above)")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m training.child SPEC``: train the run SPEC names (JSON: ``kind``, ``config``, ``precision``)."""
    cpu.prepare()  # before torch loads: OpenMP reads its wait policy once
    from training import precision
    from training.config import RLConfig, SFTConfig

    spec = json.loads((sys.argv[1:] if argv is None else argv)[0])
    precision.remember(spec["precision"])
    if spec["kind"] == "rl":
        from training.rl import train as train_rl

        train_rl(RLConfig(**spec["config"]))
    else:
        from training.sft import train as train_sft

        train_sft(SFTConfig(**spec["config"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
