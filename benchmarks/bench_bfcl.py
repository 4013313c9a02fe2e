"""BFCL multi-turn: the time to build an env for a task (warm), and the gold replayer per category.

Run: python benchmarks/bench_bfcl.py   (needs bfcl-eval: docs/bfcl.md)
"Build" is what an episode's start costs: ``make_env`` plus ``reset`` plus the first
``tool_specs`` (which builds the fresh backend instances from the task's ``initial_config``),
warm: data loaded and backend modules imported. The static baseline is not given: on a clean task it
replays each turn's gold calls as the replayer does (the replayer's row), so it would measure nothing
the replayer does not.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from _common import write

from sandbox.domains import get_domain, make_env
from sandbox.domains.bfcl import CATEGORIES
from sandbox.domains.bfcl.replayer import GoldReplayer
from sandbox.episode import run_episodes


def build_times(domain, tasks, repeat: int = 5) -> list[float]:
    """Per task, the best of ``repeat`` builds, in seconds."""
    times = []
    for task in tasks:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            env = make_env(domain, task)
            env.reset()
            env.tool_specs()
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return times


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    start = time.perf_counter()
    domain = get_domain("bfcl")
    tasks = {c: domain.tasks(category=c) for c in CATEGORIES}
    load_s = time.perf_counter() - start
    figures: dict = {"load_s": round(load_s, 3), "categories": {}}
    for category, chosen in tasks.items():
        run_episodes(GoldReplayer(), [make_env(domain, t) for t in chosen[:5]])  # warm: modules, gold caches
        times = build_times(domain, chosen)
        start = time.perf_counter()
        episodes = run_episodes(GoldReplayer(), [make_env(domain, t) for t in chosen])
        run_s = time.perf_counter() - start
        outcomes = Counter(e.outcome for e in episodes)
        figures["categories"][category] = {
            "tasks": len(chosen),
            "replayer_success": outcomes["success"],
            "replayer_outcomes": dict(outcomes),
            "failed": [e.task.id for e in episodes if e.outcome != "success"],
            "build_ms_median": round(1e3 * statistics.median(times), 4),
            "build_ms_max": round(1e3 * max(times), 4),
            "episodes_per_s": round(len(chosen) / run_s, 1),
        }
    for category, row in figures["categories"].items():
        print(
            f"{category:26s} replayer {row['replayer_success']}/{row['tasks']}  "
            f"build {row['build_ms_median']:.3f} ms median, {row['build_ms_max']:.3f} ms max  "
            f"{row['episodes_per_s']} episodes/s  failed: {row['failed']}"
        )
    print(f"data load (all four categories, cold): {load_s:.2f} s")
    write("bfcl", figures)


if __name__ == "__main__":
    main()
