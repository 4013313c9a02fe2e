"""Does every perturbation bite? The static baseline, clean vs perturbed, at each top severity.

``python benchmarks/bites.py [--per-family N] [--json PATH]`` prints the table of
:mod:`sandbox.audits.strength` and exits 1 if a perturbation that is not mild by design
does not bite.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from sandbox.audits.strength import Bite, bite, sample_tasks
from sandbox.perturbations.registry import names


def table(rows: list[Bite]) -> str:
    lines = [
        "| tier | perturbation | severity | tasks | static clean | static perturbed | drop | bites |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        perturbed = f"{r.perturbed:.0f}% refused" if r.refusal else f"{r.perturbed:.0f}%"
        verdict = "yes" if r.bites else ("mild by design" if r.mild else "**NO**")
        cells = [r.tier, r.name, r.severity, r.tasks, f"{r.clean:.0f}%", perturbed, f"{r.drop:.0f}", verdict]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=2, help="test tasks per family and domain")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    tasks = sample_tasks(args.per_family)
    rows = [bite(name, tasks) for name in names()]
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"drop": r.drop} for r in rows], indent=2))
    failing = [r.name for r in rows if not r.bites and not r.mild]
    if failing:
        print(f"\ndoes not bite: {', '.join(failing)}")
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
