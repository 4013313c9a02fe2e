"""The import arrows between the floors inside ``sandbox/``: room → room, with how many module imports each.

Reads the graph and the rooms of ``tests/test_imports.py`` (built with ``ast``, nothing imported), so it shows
what that test checks. ``python benchmarks/floors.py [ROOT]`` prints a Markdown table; ``ROOT`` (default: this
checkout) may be another checkout, to compare a tree before and after a move (its own ``test_imports.py`` may
lack the rooms: this one's are used).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def _test_imports(root: Path):
    spec = importlib.util.spec_from_file_location("floors_test_imports", HERE / "tests" / "test_imports.py")
    assert spec is not None and spec.loader is not None  # a .py file that exists: a loader is found
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ROOT = root
    return module


def arrows(root: Path) -> tuple[Counter[tuple[str, str]], set[str]]:
    """(room, room) → number of module imports, and the imports that break the floors (allowed ones marked)."""
    t = _test_imports(root)
    graph = t._graph(t._modules())
    found: Counter[tuple[str, str]] = Counter()
    for module, targets in graph.items():
        if not t._in_sandbox(module):
            continue
        for target in filter(t._in_sandbox, targets):
            here, there = t._room(module), t._room(target)
            if here != there:
                found[here, there] += 1
    breaches = {b + (" (allowed: oracle's read)" if b in t.ORACLE_READS else "") for b in t._floor_breaches(graph)}
    return found, breaches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", default=str(HERE), help="a checkout of the repository (default: this one)")
    root = Path(parser.parse_args(argv).root).resolve()
    t = _test_imports(root)
    found, breaches = arrows(root)
    print("| from (floor) | to (floor) | imports |")
    print("|---|---|---|")
    for (a, b), n in sorted(found.items(), key=lambda kv: (-t.FLOOR[kv[0][0]], kv[0][0], -t.FLOOR[kv[0][1]], kv[0][1])):
        mark = " **up or sideways**" if t.FLOOR[b] >= t.FLOOR[a] else ""
        print(f"| {a} ({t.FLOOR[a]}) | {b} ({t.FLOOR[b]}){mark} | {n} |")
    print(f"\nImports against the floors: {len(breaches)}")
    for b in sorted(breaches):
        print(f"- {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
