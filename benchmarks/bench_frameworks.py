"""What a framework and its adapter cost an episode: the same agent as ``act(turns)`` and played through each
framework's own loop, side by side in one run.

The agent is the oracle (a model that answers at once, so what is measured is everything but the model): its
moves as ``act(turns)`` in the sandbox's episode loop, then the same moves played through ``LoopAgent`` by a
plain Python loop (``python``: the per-episode thread and the hand-over of each call, no framework), and
through pydantic-ai, LangGraph and the OpenAI Agents SDK with the adapters' tools and each framework's scripted
test model (``sandbox.agents.frameworks.played``). Every row runs the same cases (clean and perturbed POI
cases); the rows take turns round by round, so each is measured under the same machine state, and the median
round is kept. Per row: milliseconds per episode and per model step, the overhead over ``act(turns)`` and the
ratio, and whether every episode succeeded. The import of each framework is timed apart (once per process).

    python benchmarks/bench_frameworks.py [--tasks 10] [--rounds 5] [--seed 0]

Prints the table and writes benchmarks/results/frameworks.json.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PERTURBATIONS = ("tool_name_noise", "description_rewrite", "schema_noise", "runtime_error")
IMPORTS = {
    "pydantic-ai": ("pydantic_ai", "pydantic_ai.models.function"),
    "langgraph": ("langchain_core.language_models.chat_models", "langgraph.prebuilt"),
    "openai-agents": ("agents",),
}
"""What each framework's played loop imports: timed apart, once per process."""


def _cases(n_tasks: int, seed: int) -> list:
    import sandbox
    from sandbox.case import Case
    from sandbox.perturbations import registry

    tasks = sandbox.tasks("poi", "test", n=n_tasks, seed=seed)
    specs = [registry.create(name, severity=registry.get(name).max_severity, seed=seed) for name in PERTURBATIONS]
    return [Case(t) for t in tasks] + [Case(t, (s,)) for t in tasks for s in specs if s.applies_to(t)]


def _rows() -> tuple[dict, dict[str, float]]:
    """Each row's agent (by name) and the seconds each framework's first import took."""
    from sandbox.agents import OracleAgent
    from sandbox.agents.frameworks.played import FRAMEWORKS, MODULES, played_through

    rows: dict = {"act(turns)": OracleAgent}
    imports: dict[str, float] = {}
    for framework in FRAMEWORKS:
        module = MODULES[framework]
        if module is not None:
            if importlib.util.find_spec(module) is None:
                print(f"  {framework}: not installed, skipped")
                continue
            start = time.perf_counter()
            for name in IMPORTS[framework]:
                importlib.import_module(name)
            imports[framework] = time.perf_counter() - start
        rows[framework] = lambda framework=framework: played_through(framework, OracleAgent())
    return rows, imports


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10, help="clean POI tasks; each also under every perturbation")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each row runs every case once a round")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from sandbox.case import run_cases

    cases = _cases(args.tasks, args.seed)
    rows, imports = _rows()
    times: dict[str, list[float]] = {name: [] for name in rows}
    steps: dict[str, int] = {}
    solved: dict[str, int] = {}
    for make in rows.values():  # a warm-up round: each framework's first run builds its classes
        run_cases(make(), cases[:2])
    for _ in range(args.rounds):
        for name, make in rows.items():
            start = time.perf_counter()
            episodes = run_cases(make(), cases)
            times[name].append(time.perf_counter() - start)
            steps[name] = sum(len(e.steps) for e in episodes)
            solved[name] = sum(e.success for e in episodes)

    n = len(cases)
    base = statistics.median(times["act(turns)"]) / n
    figures: dict = {
        "cases": n, "rounds": args.rounds, "seed": args.seed, "perturbations": list(PERTURBATIONS),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "import_s": imports, "rows": {},
    }  # fmt: skip
    print(f"{n} cases ({args.tasks} clean POI tasks, each also under {', '.join(PERTURBATIONS)}), "
          f"median of {args.rounds} rounds")  # fmt: skip
    print(f"{'agent':<14} {'ms/episode':>11} {'ms/step':>8} {'overhead ms':>12} {'ratio':>6}  solved")
    for name in rows:
        per_episode = statistics.median(times[name]) / n
        row = {"ms_per_episode": 1000 * per_episode, "ms_per_step": 1000 * per_episode * n / steps[name],
               "overhead_ms_per_episode": 1000 * (per_episode - base), "ratio": per_episode / base,
               "steps": steps[name], "solved": solved[name]}  # fmt: skip
        figures["rows"][name] = row
        print(f"{name:<14} {row['ms_per_episode']:>11.2f} {row['ms_per_step']:>8.2f} "
              f"{row['overhead_ms_per_episode']:>12.2f} {row['ratio']:>6.1f}  {solved[name]}/{n}")  # fmt: skip
    for name, seconds in imports.items():
        print(f"import of {name}: {seconds:.2f} s (once per process)")
    write("frameworks", figures)
    return figures


if __name__ == "__main__":
    main()
