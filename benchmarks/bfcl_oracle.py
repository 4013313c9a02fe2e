"""The oracle on a fixed sample of perturbed BFCL cases per multi-turn category, and on every clean base task.

python benchmarks/bfcl_oracle.py --n 100 --seed 0

For each category, ``n`` cases, each a task drawn uniformly and one solvable perturbation drawn among those
that apply to it (severity and seed by the one rule of :func:`sandbox.evaluation.draw.draw_perturbation`),
from ``seed`` alone; then the 200 clean ``multi_turn_base`` tasks. It prints each row's successes with its
95% Wilson interval, and every failure.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from sandbox.case import Case, run_cases
from sandbox.domains.bfcl.data import CATEGORIES
from sandbox.metrics import wilson
from sandbox.seeds import child_seed

LEFT_OUT = ("multi_turn_miss_func_49",)
"""Tasks BFCL's own data breaks: this one's gold plan calls ``tail`` two turns before BFCL offers it."""


def draw(category: str, n: int, seed: int = 0) -> list[Case]:
    """``n`` perturbed cases of ``category`` (less :data:`LEFT_OUT`), drawn from ``seed`` alone."""
    from sandbox.domains import get_domain
    from sandbox.evaluation.draw import applicable, draw_perturbation, perturbation_classes

    tasks = [t for t in get_domain("bfcl").tasks(category=category) if t.id not in LEFT_OUT]
    classes = tuple(c for c in perturbation_classes("all") if not c.unsolvable)
    rng = random.Random(child_seed(seed, "bfcl-sample", category))
    cases: list[Case] = []
    while len(cases) < n:
        task = tasks[rng.randrange(len(tasks))]
        fitting = applicable(classes, task)
        if fitting:
            cls = fitting[rng.randrange(len(fitting))]
            cases.append(Case(task, (draw_perturbation(cls, rng, "eval"),)))
    return cases


def _row(label: str, cases: list[Case], agent: object) -> bool:
    episodes = run_cases(agent, cases)
    k = sum(e.success for e in episodes)
    low, high = wilson(k, len(cases))
    print(f"{label}: {k}/{len(cases)} [{low:.3f}, {high:.3f}]", flush=True)
    for case, episode in zip(cases, episodes, strict=True):
        if not episode.success:
            print(f"  {case.describe()} (seed {case.perturbations[0].seed if case.perturbations else '-'}): "
                  f"{episode.outcome}")  # fmt: skip
    return k == len(cases)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100, help="perturbed cases per category (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn cases (default 0)")
    args = parser.parse_args(argv)
    from sandbox.agents.oracle import OracleAgent
    from sandbox.domains import get_domain

    agent, passed = OracleAgent(), True
    for category in CATEGORIES:
        passed &= _row(f"{category}, perturbed", draw(category, args.n, args.seed), agent)
    clean = [Case(t) for t in get_domain("bfcl").tasks(category="multi_turn_base")]
    passed &= _row("multi_turn_base, clean", clean, agent)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
