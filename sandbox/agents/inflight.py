"""``InFlight``: how many requests an HTTP agent keeps in flight, adapted to what the server says.

Additive increase, multiplicative decrease (AIMD), as TCP's congestion window and inspect_ai's
adaptive connections: each request that comes back answered raises the limit, a 429, a 503 or a
missed deadline cuts it by ``decrease``. Until the first cut the limit grows by one per answered
request (doubling each round trip, TCP's slow start); after it, by ``1 / limit`` (one per round
trip). A cut is made once per round trip: the requests sent before a cut all met the same crowded
server, so their 429s say one thing, not many. A fixed limit (``adaptive=False``) never moves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

Signal = Literal["answered", "throttled", "failed"]
"""How one request ended: the server answered it (any status but a throttle), asked the client to slow
down (429, 503, a missed deadline), or could not be reached (no word on its load either way)."""


@dataclass
class Permit:
    """One request's slot: ``signal`` is set by the request (``failed`` until it says otherwise);
    ``company``, how many other requests were in flight when it was sent."""

    epoch: int
    company: int = 0
    signal: Signal = "failed"


@dataclass
class InFlight:
    """At most ``limit`` requests at once, ``limit`` moving between ``floor`` and ``ceiling`` (see the module)."""

    ceiling: int
    start: int = 16
    floor: int = 1
    decrease: float = 0.5
    adaptive: bool = True
    limit: float = field(init=False)
    in_flight: int = field(default=0, init=False)
    counts: dict[str, int] = field(init=False)
    _epoch: int = field(default=0, init=False)
    _slow_start: bool = field(default=True, init=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.adaptive:
            self.floor = self.start = self.ceiling
        self.start = max(self.floor, min(self.start, self.ceiling))
        self.limit = float(self.start)
        self.counts = {"requests": 0, "throttled": 0, "failed": 0, "cuts": 0, "peak_in_flight": 0, "waits": 0}
        self._low = self._high = self.start

    @contextmanager
    def slot(self) -> Iterator[Permit]:
        """Wait for a free slot, hold it for one request, and learn from how that request ended."""
        permit = self.acquire()
        try:
            yield permit
        finally:
            self.release(permit)

    def acquire(self) -> Permit:
        with self._cond:
            if self.in_flight >= int(self.limit):
                self.counts["waits"] += 1
                self._cond.wait_for(lambda: self.in_flight < int(self.limit))
            permit = Permit(self._epoch, company=self.in_flight)
            self.in_flight += 1
            self.counts["requests"] += 1
            self.counts["peak_in_flight"] = max(self.counts["peak_in_flight"], self.in_flight)
            return permit

    def release(self, permit: Permit) -> None:
        with self._cond:
            self.in_flight -= 1
            if permit.signal == "answered":
                step = 1.0 if self._slow_start else 1.0 / self.limit
                self.limit = min(float(self.ceiling), self.limit + step)
            elif permit.signal == "throttled":
                self.counts["throttled"] += 1
                if permit.epoch == self._epoch and self.limit > self.floor:
                    self.limit = max(float(self.floor), self.limit * self.decrease)
                    self._epoch += 1
                    self._slow_start = False
                    self.counts["cuts"] += 1
            else:
                self.counts["failed"] += 1
            self._low, self._high = min(self._low, int(self.limit)), max(self._high, int(self.limit))
            self._cond.notify_all()

    def summary(self) -> dict[str, Any]:
        """What the limit did: its bounds and where it went, and how the requests ended (for the report)."""
        with self._cond:
            return {
                "adaptive": self.adaptive, "ceiling": self.ceiling, "start": self.start, "limit": int(self.limit),
                "lowest": self._low, "highest": self._high, **self.counts,
            }  # fmt: skip
