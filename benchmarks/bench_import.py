"""How long ``import sandbox`` and ``import pytest_openagent`` take in a fresh interpreter: the best of
``--repeat`` runs each (the least disturbed by a loaded machine), against an empty interpreter's start, with
the modules whose own import time is largest (``python -X importtime``). Bytecode is written once first, as an
installed package has it. The bar: ``import sandbox`` under 0.3 s.

    .venv/bin/python benchmarks/bench_import.py [--repeat 15] [--against OTHER_CHECKOUT]

``--against`` names another checkout (the code before a change, e.g. ``git archive main | tar -x -C DIR``),
timed in the same run, its runs interleaved with this one's so that both meet the same load. Prints a table
and the load average, writes benchmarks/results/import.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write

BAR = 0.3
STATEMENTS = {
    "empty interpreter": "pass",
    "import sandbox": "import sandbox",
    "import pytest_openagent": "import pytest_openagent",
    "sandbox's whole API": "import sandbox; [getattr(sandbox, n) for n in sandbox.__all__]",
}
"""What is timed; the last row is what a script that uses every public name of ``sandbox`` pays."""


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(root)}


def best(statement: str, roots: list[Path], repeat: int) -> list[float]:
    """The fastest of ``repeat`` runs of ``statement`` under each root, the roots' runs interleaved."""
    times: list[list[float]] = [[] for _ in roots]
    for _ in range(repeat):
        for root, kept in zip(roots, times, strict=True):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", statement], env=_env(root), cwd=root, check=True)
            kept.append(time.perf_counter() - start)
    return [min(kept) for kept in times]


def heaviest(root: Path, n: int = 8) -> list[tuple[str, float]]:
    """The modules whose own import time (not counting what they import) is largest, in ms."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import sandbox"], env=_env(root),
                         cwd=root, capture_output=True, text=True, check=True).stderr  # fmt: skip
    rows = []
    for line in err.splitlines()[1:]:
        own, _, name = line.removeprefix("import time:").split("|")
        rows.append((name.strip(), int(own) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    roots = {"this": Path(__file__).resolve().parents[1]}
    if args.against:
        roots["against"] = args.against.resolve()
    for root in roots.values():
        subprocess.run([sys.executable, "-c", STATEMENTS["sandbox's whole API"]], env=_env(root), cwd=root, check=True)
    figures: dict = {"roots": {k: str(v) for k, v in roots.items()}, "repeat": args.repeat, "best_s": {}}
    print(f"{'':<24} " + " ".join(f"{k:>9}" for k in roots) + "" + f"   (best of {args.repeat}, s)")
    for name, statement in STATEMENTS.items():
        found = best(statement, list(roots.values()), args.repeat)
        figures["best_s"][name] = dict(zip(roots, (round(t, 4) for t in found), strict=True))
        print(f"{name:<24} " + " ".join(f"{t:>9.3f}" for t in found) + f"   load {os.getloadavg()[0]:.2f}")
    root = roots["this"]
    figures["heaviest_ms"] = heaviest(root)
    print("largest own import times (ms):", ", ".join(f"{m} {t:.1f}" for m, t in figures["heaviest_ms"]))
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    figures["cpus"] = os.cpu_count()
    figures["holds"] = figures["best_s"]["import sandbox"]["this"] < BAR
    print(f"load average {figures['load_average']} on {figures['cpus']} CPUs; "
          f"import sandbox < {BAR} s: {figures['holds']}")  # fmt: skip
    write("import", figures)


if __name__ == "__main__":
    main()
