"""Perturbation overhead: an oracle episode under a 3-deep stack vs clean, and building a perturbed env.

Run: python benchmarks/bench_perturbations.py
Targets: a 3-deep stack costs at most 2x a clean oracle episode; building a perturbed env
(wrapping it, and producing the tool specs and query the agent first sees) costs under 1 ms.
A spec's rewritten tool set is cached (it does not depend on the task for most specs), so the
figure is given warm (the cache filled, as in a test session) and cold (the cache emptied first).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from _common import write

import sandbox
from sandbox import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.perturbations import create, wrappers

STACK = (
    create("semantic_renaming", severity=2),
    create("runtime_error", severity=1),
    create("argument_restructuring", severity=1),
)
"""One perturbation per tool-facing tier (names, feedback, structure): the costly surfaces of each."""


def best_cpu(fn: Callable[[], object], repeat: int = 7) -> float:
    """The least CPU time of ``repeat`` runs: steadier than wall time on a machine shared with other jobs."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    tasks = sandbox.tasks("poi", "test", 200) + sandbox.tasks("medical", "test", 200)
    oracle = OracleAgent()
    clean_cases = [Case(t) for t in tasks]
    stacked_cases = [Case(t, STACK) for t in tasks]
    run_cases(oracle, clean_cases), run_cases(oracle, stacked_cases)  # warm caches
    clean = best_cpu(lambda: run_cases(oracle, clean_cases), repeat=5) / len(tasks)
    stacked = best_cpu(lambda: run_cases(oracle, stacked_cases), repeat=5) / len(tasks)

    def build() -> None:
        for case in stacked_cases:
            env = case.env()
            env.tool_specs(), env.query()

    def build_cold() -> None:
        for case in stacked_cases:
            wrappers._BUILDS.clear()
            env = case.env()
            env.tool_specs(), env.query()

    build_s = best_cpu(build, repeat=7) / len(stacked_cases)
    cold_s = best_cpu(build_cold, repeat=7) / len(stacked_cases)
    figures = {
        "tasks": len(tasks),
        "stack": [p.label() for p in STACK],
        "clean_episode_ms": round(1e3 * clean, 3),
        "stacked_episode_ms": round(1e3 * stacked, 3),
        "stack_cost_ratio": round(stacked / clean, 2),
        "build_perturbed_env_ms": round(1e3 * build_s, 3),
        "build_perturbed_env_cold_ms": round(1e3 * cold_s, 3),
        "targets": {"stack_cost_ratio": "<= 2", "build_perturbed_env_ms": "< 1", "build_perturbed_env_cold_ms": "< 1"},
    }
    for key, value in figures.items():
        print(f"{key}: {value}")
    write("perturbations", figures)


if __name__ == "__main__":
    main()
