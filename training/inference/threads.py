"""How many of torch's threads generation uses, chosen by timing decoding steps on this machine as it runs.

A decoding step is about a thousand small parallel operations, so whether two threads beat one depends less
on the arithmetic than on how OpenMP's idle threads wait and on who else wants the cores: threads that
spin between operations are fastest on idle cores and many times slower once another process wants them;
threads that sleep wake slowly on a virtual machine's idle cores (docs/serving.md has the measurements).
No rule fits every machine and every moment, so the generator measures: it times decoding steps at the
most threads and at one, alternating step by step within a batch (both see the same rows and context; the
first call times a short forward pass instead, before its prefill), keeps the faster count for the whole of
the next calls, prefill included, and times both again after :data:`RETRY_S` seconds of decoding (longer while
the count holds), or at once when a step takes twice its usual time, as the load on the machine moves.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

TRIAL_PAIRS = 3
"""Steps timed at each count in a trial (alternating, so each count sees the same batch)."""
CLEAR_WIN = 2.0
"""A trial ends after its first pair when one count's step took this many times the other's; a step this many
times slower than its count's steps in the last trial starts a new one (someone else now wants the cores)."""
RETRY_S = 10.0
"""Seconds of decoding before the next trial; doubled after each trial that kept the count, up to
:data:`MAX_RETRY_S`, so that a steady machine spends less on trials."""
MAX_RETRY_S = 80.0


class ThreadTuner:
    """Chooses torch's intra-op thread count for generation: ``most`` (the count set when the generator was
    made) or one, whichever decoded faster in the last trial; always ``most`` without ``tune``."""

    def __init__(self, most: int, *, tune: bool = True, clock: Callable[[], float] = time.perf_counter):
        import torch

        self._torch = torch
        self.counts = (most, 1) if tune and most > 1 else (most,)
        self.chosen = most
        self.clock = clock
        self.trials = 0
        """Trials finished so far."""
        self._trial: dict[int, list[float]] | None = None
        self._decoded = 0.0  # seconds decoded since the last trial ended
        self._retry = RETRY_S
        self._usual = 0.0  # the chosen count's mean step in the last trial
        if len(self.counts) > 1:
            self._start_trial()

    @contextlib.contextmanager
    def call(self, probe: Callable[[], object]) -> Iterator[None]:
        """One generation call at the chosen count; torch's count as it was afterwards. Before the first call,
        ``probe`` (a forward pass about as costly as a decoding step) is timed at each count until the first trial
        ends, so that the first prefill, the longest, already runs at the faster one."""
        torch = self._torch
        before = torch.get_num_threads()
        try:
            while self.trials == 0 and self._trial is not None:
                self.step(probe)
            torch.set_num_threads(self.chosen)
            yield
        finally:
            torch.set_num_threads(before)

    def step(self, run: Callable[[], T]) -> T:
        """``run()`` (one decoding step) at the count the tuner wants timed or has chosen; its time recorded."""
        count = self._next()
        if self._torch.get_num_threads() != count:
            self._torch.set_num_threads(count)
        tick = self.clock()
        out = run()
        self._record(count, self.clock() - tick)
        return out

    def _start_trial(self) -> None:
        self._trial = {c: [] for c in self.counts}

    def _next(self) -> int:
        trial = self._trial
        if trial is None:
            return self.chosen
        return min(trial, key=lambda c: (len(trial[c]), -c))  # the most threads first in a pair

    def _record(self, count: int, seconds: float) -> None:
        if self._trial is None:
            self._decoded += seconds
            if len(self.counts) > 1 and (self._decoded >= self._retry or seconds >= CLEAR_WIN * self._usual):
                self._start_trial()
            return
        self._trial[count].append(seconds)
        if len({len(s) for s in self._trial.values()}) > 1:
            return  # a pair is still open
        done = len(self._trial[count])
        totals = {c: sum(s) for c, s in self._trial.items()}
        fast, slow = sorted(totals, key=totals.__getitem__)
        if done >= TRIAL_PAIRS or totals[slow] >= CLEAR_WIN * totals[fast]:
            kept = fast == self.chosen and self.trials > 0
            self._retry = min(2 * self._retry, MAX_RETRY_S) if kept else RETRY_S
            self.chosen, self._usual = fast, totals[fast] / done
            self._trial, self._decoded = None, 0.0
            self.trials += 1
