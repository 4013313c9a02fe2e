"""Progress of a long evaluation, as lines a user reads while it runs."""

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
