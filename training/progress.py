"""Progress of a long evaluation or training run, as lines a user reads while it runs (on a terminal, in a pipe
or a log file alike: no carriage returns, each line flushed)."""

from __future__ import annotations

import time
from collections.abc import Callable


class Progress:
    """``evaluate``'s progress as lines said by ``say``: the first episode, then one line every ``every`` seconds,
    and the last."""

    def __init__(self, label: str, say: Callable[[str], None], every: float = 30.0) -> None:
        self.label = label
        self.say = say
        self.every = every
        self.start = self.last = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done in (1, total) or now - self.last >= self.every:
            self.last = now
            self.say(f"{self.label}: {done} of {total} episodes in {now - self.start:.0f} s")


class StepProgress:
    """A training run's progress: a line when it starts, then one per step (``set_postfix`` gives the step's
    figures), with the steps done, the seconds so far and an estimate of the seconds left."""

    def __init__(self, desc: str, start: int, total: int, say: Callable[[str], None], every: float = 0.0) -> None:
        self.desc, self.done, self.total, self.say, self.every = desc, start, total, say, every
        self.first = start
        self.start = self.last = time.perf_counter()
        self.figures: dict[str, str] = {}
        where = f"resuming at step {start}" if start else "starting"
        say(f"{desc}: {where} of {total} steps (a line per step)")

    def set_postfix(self, **figures: str) -> None:
        self.figures = figures

    def update(self, steps: int = 1) -> None:
        self.done += steps
        now = time.perf_counter()
        if self.done < self.total and now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        per_step = elapsed / max(1, self.done - self.first)
        shown = "".join(f", {k.replace('_', '/')} {v}" for k, v in self.figures.items())
        left = f", about {per_step * (self.total - self.done):.0f} s left" if self.done < self.total else ""
        self.say(f"{self.desc}: step {self.done}/{self.total}{shown}, {elapsed:.0f} s{left}")

    def close(self) -> None:
        """Nothing to release: each line is already written."""
