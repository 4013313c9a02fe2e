"""Sandbox speed: tool steps per second, oracle episodes per second, and import time.

Run: python benchmarks/bench_sandbox.py
A tool step is what the runner does per call: parse the reply, validate the arguments, execute
the tool, render the observation. Measured on one core (no threads in play).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _common import best_of, median_of, write

import sandbox
from sandbox import OracleAgent, make_env, run_episodes
from sandbox.parse import parse_reply


def tool_steps(n_tasks: int = 200) -> tuple[list, list[str]]:
    """(env, reply text) pairs: each gold call of some test tasks, as an agent would write it."""
    pairs = []
    for task in sandbox.tasks("poi", "test", n_tasks):
        env = make_env("poi", task)
        for call in task.plan:
            text = f"<tool_call>\n{json.dumps({'name': call.tool, 'arguments': call.args})}\n</tool_call>"
            pairs.append((env, text))
    return pairs


def run_steps(pairs) -> None:
    for env, text in pairs:
        for call in parse_reply(text).calls:
            env.observe(env.call(call.name, call.arguments))


def import_time() -> tuple[float, float]:
    """Median wall and CPU seconds of ``import sandbox`` in a fresh interpreter (CPU time is what a
    loaded machine distorts least)."""
    code = (
        "import time; w, c = time.perf_counter(), time.process_time(); import sandbox; "
        "print(time.perf_counter() - w, time.process_time() - c)"
    )
    # Warm bytecode cache, as an installed package has (this machine sets PYTHONDONTWRITEBYTECODE).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import sandbox"], env=env, check=True)
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True) for _ in range(7)]
    walls, cpus = zip(*(map(float, r.stdout.split()) for r in runs), strict=True)
    return sorted(walls)[3], sorted(cpus)[3]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    pairs = tool_steps()
    run_steps(pairs)  # warm caches (worlds, pydantic validators)
    seconds = best_of(lambda: run_steps(pairs), repeat=7)
    per_step_us = 1e6 * seconds / len(pairs)

    tasks = sandbox.tasks("poi", "test")
    oracle = OracleAgent()
    episode_s = median_of(lambda: run_episodes(oracle, [make_env("poi", t) for t in tasks]), repeat=3)

    import_wall, import_cpu = import_time()
    figures = {
        "tool_steps": len(pairs),
        "tool_steps_per_s": round(len(pairs) / seconds),
        "us_per_tool_step": round(per_step_us, 1),
        "oracle_episodes_per_s": round(len(tasks) / episode_s),
        "import_sandbox_s": round(import_wall, 3),
        "import_sandbox_cpu_s": round(import_cpu, 3),
        "targets": {"tool_steps_per_s": ">= 10000", "us_per_tool_step": "<= 100", "import_sandbox_s": "< 0.3"},
    }
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    write("sandbox", figures)


if __name__ == "__main__":
    main()
