"""How often the worst-case search finds a failure that the default search misses, over seeds, at one budget.

Run: python benchmarks/bench_worst.py [--seeds 10] [--budget 60] [--only pytest|eval]
The agent is ``tests/toys.py``'s ``Strained``: the oracle, except that it fails only under ``toy_shout`` at its
top severity (3) stacked with ``toy_hum`` at 27 or more (of 30), and works harder the louder the query;
``toy_space`` is a third perception perturbation that changes nothing for it. Both searches draw the same
cases (stacks of up to 2 of the three) with the same budget and seed:

- ``pytest``: an ``@openagent.perturb(max_examples=BUDGET)`` test run by pytest with ``--openagent-search
  default`` and ``worst``, each seed in a fresh project (no example database, no episode cache);
- ``eval``: ``pytest_openagent.search.search_tier``, what ``openagent eval --worst BUDGET`` runs per tier,
  targeted and not (``targeted=False``: nothing given to ``target()``).

A run counts as found when the search reached the failure (pytest: the test failed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import write

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["toy_shout", "toy_hum", "toy_space"]
USER_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names={names!r}, max_stack=2, max_examples={budget})
def test_agent(agent, case):
    assert case.run(agent).success
"""


def pytest_found(seed: int, search: str, budget: int) -> tuple[bool, float]:
    """Whether the pytest run with ``--openagent-search search`` found the failure, and its seconds."""
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        project.joinpath("conftest.py").write_text(
            (ROOT / "tests" / "toys.py").read_text()
            + "\n\nregister_toys()\n\n\ndef pytest_unconfigure(config):\n    unregister_toys()\n"
        )
        project.joinpath("test_user.py").write_text(USER_TEST.format(names=NAMES, budget=budget))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                   "--openagent-agent", "conftest:Strained", "--openagent-cache-dir", "cache",
                   "--openagent-search", search, "--openagent-seed", str(seed)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.returncode == 1, seconds


def eval_found(seed: int, targeted: bool, budget: int) -> dict:
    from pytest_openagent.search import WORST_STACK, search_tier
    from sandbox.evaluation.cache import EpisodeCache
    from sandbox.evaluation.runner import Runner
    from sandbox.evaluation.sample import Sample
    from tests.toys import Strained

    sample = Sample(seed=seed, names=NAMES, max_stack=WORST_STACK)
    found = search_tier(Strained(), "perception", budget, Runner(EpisodeCache(None)), sample, targeted=targeted)
    return {"found": found.failure is not None, "examples": found.examples, "episodes": found.episodes,
            "worst": found.worst.label if found.worst else None, "score": found.score}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--budget", type=int, default=60, help="cases each search may draw (default 60)")
    parser.add_argument("--only", choices=("pytest", "eval"), default=None, help="run one of the two (default both)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.toys import register_toys

    register_toys()
    figures: dict = {"seeds": args.seeds, "budget": args.budget, "names": NAMES}
    if args.only in (None, "pytest"):
        runs = {
            search: [pytest_found(s, search, args.budget) for s in range(args.seeds)] for search in ("default", "worst")
        }
        figures["pytest"] = {
            search: {"found": sum(f for f, _ in rows), "per_seed": [f for f, _ in rows],
                     "seconds": round(sum(t for _, t in rows), 1)}
            for search, rows in runs.items()
        }  # fmt: skip
        default, worst = figures["pytest"]["default"]["found"], figures["pytest"]["worst"]["found"]
        print(f"pytest, {args.budget} examples: --openagent-search worst found it in {worst}/{args.seeds} seeds, "
              f"default in {default}/{args.seeds}")  # fmt: skip
    if args.only in (None, "eval"):
        rows = {"targeted": [eval_found(s, True, args.budget) for s in range(args.seeds)],
                "default": [eval_found(s, False, args.budget) for s in range(args.seeds)]}  # fmt: skip
        figures["eval"] = {
            name: {"found": sum(r["found"] for r in runs), "per_seed": runs} for name, runs in rows.items()
        }
        targeted, default = figures["eval"]["targeted"]["found"], figures["eval"]["default"]["found"]
        episodes = [r["episodes"] for r in rows["targeted"]]
        print(f"search_tier (openagent eval --worst {args.budget}): targeted found it in {targeted}/{args.seeds} "
              f"seeds, untargeted in {default}/{args.seeds}; targeted searches needed {min(episodes)}-"
              f"{max(episodes)} distinct episodes (shrinking included)")  # fmt: skip
    write("worst", figures)


if __name__ == "__main__":
    main()
