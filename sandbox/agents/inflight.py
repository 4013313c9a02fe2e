"""``InFlight``: how many requests an HTTP agent keeps in flight, adapted to what the server says.

Additive increase, multiplicative decrease (AIMD), as TCP's congestion window and inspect_ai's
adaptive connections: each request that comes back answered raises the limit, a 429, a 503 or a
missed deadline cuts it by ``decrease``. Until the first cut the limit grows by one per answered
request (doubling each round trip, TCP's slow start); after it, by ``1 / limit`` (one per round
trip). A cut is made once per round trip: the requests sent before a cut all met the same crowded
server, so their 429s say one thing, not many. A fixed limit (``adaptive=False``) never moves.

It lives on one event loop (the agent's, :mod:`sandbox.agents.background`): a request waits for its slot
without a thread, and only :meth:`InFlight.summary` is read from other threads.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
    _woken: int = field(default=0, init=False, repr=False)
    _waiting: collections.deque[asyncio.Future[None]] = field(default_factory=collections.deque, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.adaptive:
            self.floor = self.start = self.ceiling
        self.start = max(self.floor, min(self.start, self.ceiling))
        self.limit = float(self.start)
        self.counts = {"requests": 0, "throttled": 0, "failed": 0, "cuts": 0, "peak_in_flight": 0, "waits": 0}
        self._low = self._high = self.start

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Permit]:
        """Wait for a free slot, hold it for one request, and learn from how that request ended."""
        permit = await self.acquire()
        try:
            yield permit
        finally:
            self.release(permit)

    async def acquire(self) -> Permit:
        """A slot, once one is free; requests that wait are served in the order they came."""
        permit = None if self._waiting else self.admit()
        if permit is not None:
            return permit
        self.counts["waits"] += 1
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        while True:
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # woken, then cancelled: the next in line gets the slot
                    self._woken -= 1
                    self._wake()
                raise
            self._woken -= 1
            if self.in_flight < int(self.limit):
                return self._take()
            turn = asyncio.get_running_loop().create_future()  # the limit was cut meanwhile: first in line again
            self._waiting.appendleft(turn)

    def admit(self) -> Permit | None:
        """A slot if one is free now (none held for a request already woken), else ``None``."""
        return self._take() if self.in_flight + self._woken < int(self.limit) else None

    def _take(self) -> Permit:
        permit = Permit(self._epoch, company=self.in_flight)
        self.in_flight += 1
        self.counts["requests"] += 1
        self.counts["peak_in_flight"] = max(self.counts["peak_in_flight"], self.in_flight)
        return permit

    def release(self, permit: Permit) -> None:
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
        self._wake()

    def _wake(self) -> None:
        """Wake as many of the requests in line as there are free slots, first come first."""
        while self._waiting and self.in_flight + self._woken < int(self.limit):
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                self._woken += 1

    def summary(self) -> dict[str, Any]:
        """What the limit did: its bounds and where it went, and how the requests ended (for the report)."""
        return {
            "adaptive": self.adaptive, "ceiling": self.ceiling, "start": self.start, "limit": int(self.limit),
            "lowest": self._low, "highest": self._high, **dict(self.counts),
        }  # fmt: skip
