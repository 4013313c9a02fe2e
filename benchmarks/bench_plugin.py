"""Plugin speed: the per-example overhead of ``perturb``, and a suite rerun with a warm episode cache.

Run: python benchmarks/bench_plugin.py
- Overhead: a ``perturb`` test over all tiers with the oracle, run by Hypothesis in this process
  through the same runner the pytest session installs (disk cache, one record per episode). The
  figure is the median time between consecutive example bodies: draw + build + run (the case and
  its clean twin) + record + Hypothesis' own bookkeeping. Cold cache, so every episode really runs.
- Warm vs cold: a suite of perturb tests with an agent that sleeps per call (as a served model
  would), run once on an empty cache and again on the filled one (a new cache object, so episodes
  are read back from disk). Same seeds, so the rerun draws the same cases.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from _common import write

import pytest_openagent as openagent
from pytest_openagent.decorator import SessionDatabase
from sandbox.agents import OracleAgent
from sandbox.case import install_runner
from sandbox.evaluation import Runner
from sandbox.evaluation import cache as cache_module
from sandbox.evaluation.cache import EpisodeCache
from sandbox.seeds import child_seed

SLEEP_PER_CALL = 0.02


class SlowOracle(OracleAgent):
    """The oracle, at the cost of a served model: ``SLEEP_PER_CALL`` seconds per batch."""

    def fingerprint(self) -> str:
        return "slow-oracle-v1"

    def act(self, turns):
        time.sleep(SLEEP_PER_CALL)
        return super().act(turns)


def _session(directory: Path) -> tuple[Runner, list]:
    records: list = []
    runner = Runner(EpisodeCache(directory / "episodes"), records.append)
    install_runner(runner)
    SessionDatabase.directory = directory / "hypothesis"
    return runner, records


class _Timed:
    """Wraps the sandbox's ``run_cases`` to measure the time spent in episodes (agent and sandbox)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.inner = cache_module.run_cases

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def _seeded(test, seed: int):
    test._hypothesis_internal_use_seed = child_seed(seed, test.__qualname__)  # as the session does
    return test


def overhead(examples: int = 300) -> dict:
    agent = OracleAgent()
    stamps: list[float] = []

    @openagent.perturb(tier="all", max_examples=examples)
    def test_oracle(case):
        stamps.append(time.perf_counter())
        episode = case.run(agent)
        assert episode.success, episode.explain()

    timed = _Timed()
    cache_module.run_cases = timed
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner, records = _session(Path(tmp))
            start = time.perf_counter()
            _seeded(test_oracle, 0)()
            runner.cache.flush()
            total = time.perf_counter() - start
    finally:
        cache_module.run_cases = timed.inner
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return {
        "examples": len(stamps),
        "records": len(records),
        "median_ms": 1000 * statistics.median(gaps),
        "p90_ms": 1000 * statistics.quantiles(gaps, n=10)[-1],
        "mean_ms": 1000 * total / len(stamps),
        "episodes_mean_ms": 1000 * timed.seconds / len(stamps),
        "plugin_mean_ms": 1000 * (total - timed.seconds) / len(stamps),
    }


def suite(tests: int = 4, examples: int = 15) -> list:
    agent = SlowOracle()
    out = []
    for i, tier in enumerate(["perception", "interaction", "reasoning", "internalization"][:tests]):

        @openagent.perturb(tier=tier, max_examples=examples)
        def test_tier(case):
            assert case.run(agent).success

        test_tier.__qualname__ = f"test_{tier}_{i}"
        out.append(_seeded(test_tier, 0))
    return out


def warm_vs_cold() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for run in ("cold", "warm"):
            runner, records = _session(Path(tmp))
            start = time.perf_counter()
            for test in suite():
                test()
                runner.cache.flush()  # as the session does after each test
            times[run] = time.perf_counter() - start
            times[f"{run}_records"] = len(records)
    return {**times, "speedup": times["cold"] / times["warm"], "sleep_per_call_s": SLEEP_PER_CALL}


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    figures = {"overhead": overhead(), "warm_vs_cold": warm_vs_cold()}
    install_runner(None)
    o, w = figures["overhead"], figures["warm_vs_cold"]
    print(f"perturb overhead, oracle, cold cache: median {o['median_ms']:.2f} ms per example, p90 {o['p90_ms']:.2f} ms")
    print(
        f"  mean {o['mean_ms']:.2f} ms = episodes (oracle + sandbox) {o['episodes_mean_ms']:.2f} ms"
        f" + plugin (draw, cache, record, Hypothesis) {o['plugin_mean_ms']:.2f} ms"
    )
    print(f"  ({o['examples']} examples, {o['records']} records; target: median < 2 ms)")
    print(
        f"suite of 4 perturb tests, agent sleeping {SLEEP_PER_CALL * 1000:.0f} ms per call: "
        f"cold {w['cold']:.2f} s, warm {w['warm']:.3f} s, {w['speedup']:.0f}x faster (target >= 20x)"
    )
    write("plugin", figures)


if __name__ == "__main__":
    main()
