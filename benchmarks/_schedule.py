"""What ``bench_openai`` compares a run with: the same episodes run by a client and a server that cost nothing.

Episodes are chains of requests (a turn waits for the reply to the one before it) and a run is a finite batch
of them, ``window`` at once. So ``window / mean latency`` is a rate no client reaches: once fewer than
``window`` episodes are left, slots stand empty however fast the client is. :func:`ideal_wall` is the wall time
of the same chains, with this run's latencies, started in the runner's order, each into the first slot to free,
with no time between a reply and the next request: the least wall time a client could have had.

:func:`summary` reads the server's log of answered requests (:class:`Served`, times on one monotonic clock
shared by both processes) and says how far the run was from that, and where the rest went.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple


class Served(NamedTuple):
    """One answered request, as the server saw it: its episode, its turn, when it arrived and was answered, and
    the latency the server meant it to have."""

    episode: str
    turn: int
    arrived: float
    replied: float
    latency: float


def ideal_wall(chains: Sequence[Sequence[float]], window: int) -> float:
    """Seconds for ``chains`` (each an episode's request latencies, in turn order) run ``window`` at once, in
    order, each episode starting in the first slot to free, with no cost between requests."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    free = [0.0] * min(window, max(len(chains), 1))
    end = 0.0
    for chain in chains:
        done = heapq.heappop(free) + sum(chain)
        end = max(end, done)
        heapq.heappush(free, done)
    return end


def chains(log: Sequence[Served], order: Sequence[str]) -> list[list[float]]:
    """Each episode's latencies in turn order, episodes in ``order`` (the runner's); an episode the server never
    answered is an empty chain."""
    turns: dict[str, dict[int, float]] = {}
    for r in log:
        turns.setdefault(r.episode, {})[r.turn] = r.latency
    return [[t[k] for k in sorted(t)] for t in (turns.get(e, {}) for e in order)]


def in_service(log: Sequence[Served], start: float, until: float) -> float:
    """The mean number of requests the server held over ``[start, until]``, weighted by time."""
    if until <= start:
        return 0.0
    held = sum(max(0.0, min(r.replied, until) - max(r.arrived, start)) for r in log)
    return held / (until - start)


def summary(log: Sequence[Served], order: Sequence[str], window: int, start: float, end: float) -> dict[str, Any]:
    """The run (``start`` to ``end``, ``window`` episodes at once, episodes started in ``order``) against its ideal.

    ``ideal_s``: :func:`ideal_wall` of its chains; ``ratio``: ``ideal_s`` over the wall time; ``limit_rps``:
    ``window`` / mean latency, and ``drain``: the share of it the ideal reaches (what a finite batch of chains
    leaves empty); ``busy``: the requests at the server, over ``window``, while every slot had an episode (from
    the start until the last episode sent its first request), by Little's law the share of ``limit_rps`` the
    client kept up in that time; ``turnaround_ms``: from a reply leaving the server to the same episode's next
    request arriving (the client reading it, the episode's step, the next request sent), median and 95th
    percentile; ``ramp_ms``: until the first ``window`` episodes had each sent their first request; ``late_ms``:
    the server's mean delay past the latency it meant.
    """
    wall = end - start
    mean = statistics.fmean(r.latency for r in log)
    ideal = ideal_wall(chains(log, order), window)
    firsts: dict[str, float] = {}
    by_turn: dict[tuple[str, int], Served] = {(r.episode, r.turn): r for r in log}
    gaps = []
    for r in log:
        firsts[r.episode] = min(firsts.get(r.episode, r.arrived), r.arrived)
        before = by_turn.get((r.episode, r.turn - 1))
        if before is not None:
            gaps.append(r.arrived - before.replied)
    full = max(firsts.values())
    started = [firsts[e] for e in order[:window] if e in firsts]
    p95 = statistics.quantiles(gaps, n=20)[18] if len(gaps) > 1 else sum(gaps)
    return {
        "ideal_s": round(ideal, 3),
        "ideal_rps": round(len(log) / ideal, 2),
        "ratio": round(ideal / wall, 3),
        "limit_rps": round(window / mean, 2),
        "limit_ratio": round(len(log) / wall / (window / mean), 3),
        "drain": round(len(log) / ideal / (window / mean), 3),
        "busy": round(in_service(log, start, full) / window, 3),
        "turnaround_ms": [round(1000 * statistics.median(gaps), 2) if gaps else 0.0, round(1000 * p95, 2)],
        "ramp_ms": round(1000 * (max(started) - start), 1) if started else 0.0,
        "late_ms": round(1000 * statistics.fmean(r.replied - r.arrived - r.latency for r in log), 2),
    }


__all__ = ["Served", "chains", "ideal_wall", "in_service", "summary"]
