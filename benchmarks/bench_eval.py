"""Evaluation throughput of a model agent: the runner's batching before and after the window, side by side.

    HF_HUB_OFFLINE=1 python benchmarks/bench_eval.py --agent hf:DIR --n 5 --batch-size 8

The same cases (``n`` per tier of the POI test split, eval pool, and their clean twins) run through the same
agent twice, in one process, alternating:

- **before**: the runner as it was: ``batch-size`` cases and their twins at a time, and inside each such
  batch one lockstep run per step budget (a perturbed case may have a larger budget than its twin), each
  waiting for its longest episode;
- **after**: ``Runner.run_batches`` now: one lockstep run over every case with at most ``2 × batch-size``
  episodes at once, each ending episode's place taken by the next, whatever its budget.

Prints episodes per second of each and writes ``benchmarks/results/eval.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write


def before(agent, cases, batch_size: int) -> int:
    """The previous batching: per batch of cases and twins, one lockstep run per step budget; the successes."""
    from sandbox.episode import run_episodes

    episodes = []
    for start in range(0, len(cases), batch_size):
        part = cases[start : start + batch_size]
        group = [*part, *(c.clean() for c in part)]
        by_budget: dict[int, list[int]] = {}
        for i, case in enumerate(group):
            by_budget.setdefault(case.max_steps, []).append(i)
        ran = {}
        for budget, rows in by_budget.items():
            for i, episode in zip(rows, run_episodes(agent, [group[i].env() for i in rows], budget), strict=True):
                ran[i] = episode
        episodes += ran.values()
    return sum(e.success for e in episodes)


def after(agent, cases, batch_size: int) -> int:
    from sandbox.evaluation.cache import EpisodeCache
    from sandbox.evaluation.runner import Runner

    records = Runner(EpisodeCache(None)).run_batches(agent, cases, batch_size)
    return sum(r.success + r.clean_success for r in records)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agent", required=True, help="hf:DIR (a fine-tuned checkpoint) or another agent spec")
    p.add_argument("--n", type=int, default=5, help="cases per tier (plus their clean twins)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from sandbox.evaluation.draw import draw_cases
    from sandbox.evaluation.specs import load_agent

    cases = draw_cases("all", args.n, args.seed, "poi", "test")
    agent = load_agent(args.agent)
    result: dict = {"agent": args.agent, "cases": len(cases), "episodes": 2 * len(cases), "batch_size": args.batch_size}
    for name, run in (("before", before), ("after", after)):
        if hasattr(agent, "reset"):
            agent.reset()
        t = time.perf_counter()
        successes = run(agent, cases, args.batch_size)
        seconds = time.perf_counter() - t
        result[name] = {"seconds": round(seconds, 1), "episodes_per_second": round(2 * len(cases) / seconds, 3),
                        "successes": successes}  # fmt: skip
        print(f"{name}: {2 * len(cases)} episodes in {seconds:.1f} s, {2 * len(cases) / seconds:.3f} episodes/s, "
              f"{successes} successes", flush=True)  # fmt: skip
    result["speedup"] = round(result["after"]["episodes_per_second"] / result["before"]["episodes_per_second"], 2)
    print(f"after / before: {result['speedup']}x")
    write("eval", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
