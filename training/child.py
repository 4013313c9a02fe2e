"""A training run or a pytest session in a child process, its output relayed line by line as it comes.

The demo trains each model in a process of its own: the same PAFT run took 1.2-1.35× as long a step in the
demo's process, after the SFT had trained there, as in a fresh one (docs/experiments.md), and a process's
memory goes back to the system when it ends. The child is ``python -m training.child CONFIG``: the run's
options and the precision timings this process already measured for its model, so that the child does not
time them again.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from training import cpu

HEARTBEAT = 30.0
"""Seconds of silence from the child after which the parent says it is still running."""


def relay(
    argv: Sequence[str], line: Callable[[str], None], quiet: Callable[[float], None], cwd: Path | None = None,
) -> int:  # fmt: skip
    """Run ``python -u ARGV`` (this interpreter), each line it prints (stdout and stderr) given to ``line`` as it
    comes, ``quiet`` told the seconds so far after each :data:`HEARTBEAT` of silence; its exit code. The child
    is killed if this process is interrupted while it runs."""
    lines: queue.Queue[str | None] = queue.Queue()
    with subprocess.Popen(
        [sys.executable, "-u", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
        bufsize=1, env=cpu.child_environment(),
    ) as process:  # fmt: skip
        assert process.stdout is not None
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        start = time.perf_counter()
        try:
            while True:
                try:
                    text = lines.get(timeout=HEARTBEAT)
                except queue.Empty:
                    quiet(time.perf_counter() - start)
                    continue
                if text is None:
                    break
                line(text.rstrip("\n"))
        except BaseException:
            process.kill()
            raise
    return process.returncode


def _pump(stream: Any, lines: queue.Queue) -> None:
    for text in stream:
        lines.put(text)
    lines.put(None)


def train(cfg: Any, label: str, say: Callable[[str], None]) -> Path:
    """Train the SFT run ``cfg`` (an ``SFTConfig``) in a child process, its output shown as the run's own; the
    run's folder. A child that fails raises a ``RuntimeError`` (its traceback was shown)."""
    from training import precision

    spec = json.dumps({"config": cfg.to_dict(), "precision": precision.measured()})
    code = relay(
        ["-m", "training.child", spec], lambda text: print(text, file=sys.stderr, flush=True),
        lambda seconds: say(f"{label}: training, {seconds:.0f} s"),
    )  # fmt: skip
    if code != 0:
        raise RuntimeError(f"{label}: the training process exited {code} (its output is above)")
    return Path(cfg.out)


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
