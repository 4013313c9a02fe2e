"""Plugin speed: what the installed plugin costs a run that does not use it, the per-example overhead of
``perturb``, and a suite rerun with a warm episode cache.

Run: python benchmarks/bench_plugin.py [--only startup|overhead|warm]
- Startup: a pytest run of a project with no robustness test (20 plain tests, no ``--openagent-*``
  option), in a fresh interpreter, with the plugin and with ``-p no:openagent``, alternated; the
  median of each and their difference, the plugin's cost, in wall-clock and in CPU time (on a shared
  machine the wall clock mostly measures the neighbours). Beside it, ``import pytest_openagent`` and
  ``import sandbox`` in a fresh interpreter (time and modules loaded), and the modules of this
  package and Hypothesis that the plain run loaded.
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
import json
import os
import statistics
import subprocess
import sys
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
ROOT = Path(__file__).resolve().parents[1]
PLAIN_TESTS = 20

_RUN_PYTEST = """
import json, sys, time
start, cpu = time.perf_counter(), time.process_time()
import pytest
rc = pytest.main(sys.argv[1:])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"sandbox", "hypothesis", "pytest_openagent", "pydantic"})
print(json.dumps({"rc": int(rc), "seconds": elapsed, "cpu": cpu, "modules": len(sys.modules), "loaded": loaded}))
"""

_IMPORT = """
import json, sys, time
{first}
before = set(sys.modules)
start = time.perf_counter()
import {module}
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "modules": len(set(sys.modules) - before)}}))
"""


def _python(code: str, *args: str, cwd: Path | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def startup(repeat: int = 9) -> dict:
    """A plain pytest run with the plugin installed against the same run with ``-p no:openagent``."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_plain.py").write_text(
            "".join(f"def test_{i}():\n    assert {i} + 1 > {i}\n\n" for i in range(PLAIN_TESTS))
        )
        args = ["-q", "-p", "no:cacheprovider", str(project)]
        runs: dict[str, list[dict]] = {"plugin": [], "no_plugin": []}
        for _ in range(repeat):  # alternated, so a change in the machine's load hits both alike
            runs["plugin"].append(_python(_RUN_PYTEST, *args, cwd=project))
            runs["no_plugin"].append(_python(_RUN_PYTEST, *args, "-p", "no:openagent", cwd=project))
    assert all(r["rc"] == 0 for rs in runs.values() for r in rs), runs
    median = {k: statistics.median(r["seconds"] for r in rs) for k, rs in runs.items()}
    cpu = {k: statistics.median(r["cpu"] for r in rs) for k, rs in runs.items()}
    imports = {
        module: min(
            (_python(_IMPORT.format(module=module, first=first)) for _ in range(repeat)), key=lambda r: r["seconds"]
        )
        for module, first in (("pytest_openagent", ""), ("sandbox", ""), ("pytest_openagent.plugin", "import pytest"))
    }
    return {
        "tests": PLAIN_TESTS,
        "plugin_s": median["plugin"],
        "no_plugin_s": median["no_plugin"],
        "overhead_ms": 1000 * (median["plugin"] - median["no_plugin"]),
        "plugin_cpu_s": cpu["plugin"],
        "no_plugin_cpu_s": cpu["no_plugin"],
        "overhead_cpu_ms": 1000 * (cpu["plugin"] - cpu["no_plugin"]),
        "plugin_modules": runs["plugin"][0]["modules"],
        "no_plugin_modules": runs["no_plugin"][0]["modules"],
        "plugin_loaded": runs["plugin"][0]["loaded"],
        "import_pytest_openagent_ms": 1000 * imports["pytest_openagent"]["seconds"],
        "import_pytest_openagent_modules": imports["pytest_openagent"]["modules"],
        "import_sandbox_ms": 1000 * imports["sandbox"]["seconds"],
        "import_sandbox_modules": imports["sandbox"]["modules"],
        "load_plugin_ms": 1000 * imports["pytest_openagent.plugin"]["seconds"],
        "load_plugin_modules": imports["pytest_openagent.plugin"]["modules"],
    }


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


def _print_startup(s: dict) -> None:
    print(
        f"pytest run of {s['tests']} plain tests (in-process, median): plugin installed "
        f"{s['plugin_s'] * 1000:.0f} ms ({s['plugin_modules']} modules), -p no:openagent "
        f"{s['no_plugin_s'] * 1000:.0f} ms ({s['no_plugin_modules']} modules): the plugin costs "
        f"{s['overhead_ms']:+.0f} ms (target: a few tens of ms)"
    )
    print(
        f"  CPU time (less disturbed by a busy machine): {s['plugin_cpu_s'] * 1000:.0f} ms against "
        f"{s['no_plugin_cpu_s'] * 1000:.0f} ms, the plugin costs {s['overhead_cpu_ms']:+.0f} ms"
    )
    print(f"  loaded by the plain run: {', '.join(s['plugin_loaded']) or 'none of sandbox, hypothesis, pydantic'}")
    print(
        f"import pytest_openagent: {s['import_pytest_openagent_ms']:.0f} ms, {s['import_pytest_openagent_modules']} "
        f"modules; import sandbox: {s['import_sandbox_ms']:.0f} ms, {s['import_sandbox_modules']} modules (best run)"
    )
    print(
        f"loading the plugin as pytest does (pytest already imported): {s['load_plugin_ms']:.1f} ms, "
        f"{s['load_plugin_modules']} modules (best run)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("startup", "overhead", "warm"), default=None, help="run one part")
    only = parser.parse_args().only
    figures = {}
    if only in (None, "startup"):
        figures["startup"] = startup()
        _print_startup(figures["startup"])
    if only in (None, "overhead"):
        figures["overhead"] = overhead()
    if only in (None, "warm"):
        figures["warm_vs_cold"] = warm_vs_cold()
    install_runner(None)
    if "overhead" in figures:
        _print_overhead(figures["overhead"])
    if "warm_vs_cold" in figures:
        _print_warm(figures["warm_vs_cold"])
    write("plugin" if only is None else f"plugin_{only}", figures)


def _print_overhead(o: dict) -> None:
    print(f"perturb overhead, oracle, cold cache: median {o['median_ms']:.2f} ms per example, p90 {o['p90_ms']:.2f} ms")
    print(
        f"  mean {o['mean_ms']:.2f} ms = episodes (oracle + sandbox) {o['episodes_mean_ms']:.2f} ms"
        f" + plugin (draw, cache, record, Hypothesis) {o['plugin_mean_ms']:.2f} ms"
    )
    print(f"  ({o['examples']} examples, {o['records']} records; target: median < 2 ms)")


def _print_warm(w: dict) -> None:
    print(
        f"suite of 4 perturb tests, agent sleeping {SLEEP_PER_CALL * 1000:.0f} ms per call: "
        f"cold {w['cold']:.2f} s, warm {w['warm']:.3f} s, {w['speedup']:.0f}x faster (target >= 20x)"
    )


if __name__ == "__main__":
    main()
