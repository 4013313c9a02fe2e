"""Does every perturbation bite? The static baseline, clean vs perturbed, at each top severity.

``python benchmarks/bites.py [--per-family N] [--json PATH]`` prints the table. A
perturbation bites when the static agent loses at least 50 points of success; for the refusal
scenarios its perturbed "success" is its refusal rate, so the drop is how often it fails to
refuse. Rows whose spec explains why it is ``mild`` are exempt by design. The sandbox's tests
assert the same verdicts (``tests/sandbox/test_perturbations_registry.py``) and draw their sample
of tasks from here.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from sandbox.agents.static import StaticAgent
from sandbox.case import Case, run_cases
from sandbox.domains import get_domain
from sandbox.perturbations.registry import get, names
from sandbox.task import Task

THRESHOLD = 50.0
BASELINE_DOMAINS = {"domain_transfer": ("poi",)}
"""Domain transfer is measured against the static agent trained on POI only (the paper's setting);
every other row uses the static agent trained on both clean worlds, so both domains count."""


@dataclass(frozen=True)
class Bite:
    name: str
    tier: str
    severity: int
    tasks: int
    clean: float
    perturbed: float
    refusal: bool
    mild: str

    @property
    def drop(self) -> float:
        return self.clean - self.perturbed

    @property
    def bites(self) -> bool:
        return self.drop >= THRESHOLD


def sample_tasks(per_family: int = 2, n: int = 300) -> list[Task]:
    """``per_family`` test tasks of every family of both domains."""
    out = []
    for domain in ("poi", "medical"):
        seen: dict[str, int] = defaultdict(int)
        for task in get_domain(domain).tasks("test", n):
            if seen[task.family] < per_family:
                seen[task.family] += 1
                out.append(task)
    return out


def bite(name: str, tasks: list[Task], pool: str = "eval", seed: int = 0) -> Bite:
    cls = get(name)
    spec = cls(severity=cls.max_severity, pool=pool, seed=seed)
    chosen = [t for t in tasks if spec.applies_to(t)]
    agent = StaticAgent(BASELINE_DOMAINS.get(name, ("poi", "medical")))
    clean = run_cases(agent, [Case(t) for t in chosen])
    perturbed = run_cases(agent, [Case(t, (spec,)) for t in chosen])
    share = lambda eps: 100.0 * sum(e.success for e in eps) / max(1, len(eps))
    return Bite(name, cls.tier, spec.severity, len(chosen), share(clean), share(perturbed), cls.unsolvable, cls.mild)


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
