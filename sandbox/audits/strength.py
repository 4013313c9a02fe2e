"""How hard each perturbation bites: the static baseline's success, clean and perturbed, at top severity.

The static baseline follows the clean plan blind, so a perturbation that changes nothing it relies
on leaves it untouched: a perturbation *bites* when the static agent loses at least
:data:`THRESHOLD` points. For the refusal scenarios its perturbed "success" is its refusal rate, so
the drop is how often it fails to refuse. A class that explains why it is ``mild`` is exempt by
design. The sandbox's tests assert these verdicts; ``python benchmarks/bites.py`` prints the table.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sandbox.agents.static import StaticAgent
from sandbox.case import Case, run_cases
from sandbox.domains import get_domain
from sandbox.perturbations.base import Pool
from sandbox.perturbations.registry import get
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


def sample_tasks(per_family: int = 2, n: int = 300, domains: tuple[str, ...] = ("poi", "medical")) -> list[Task]:
    """``per_family`` test tasks of every family of each of ``domains`` (ours by default)."""
    out = []
    for domain in domains:
        seen: dict[str, int] = defaultdict(int)
        for task in get_domain(domain).tasks("test", n):
            if seen[task.family] < per_family:
                seen[task.family] += 1
                out.append(task)
    return out


def bite(name: str, tasks: list[Task], pool: Pool = "eval", seed: int = 0) -> Bite:
    cls = get(name)
    spec = cls(severity=cls.max_severity, pool=pool, seed=seed)
    chosen = [t for t in tasks if spec.applies_to(t)]
    agent = StaticAgent(BASELINE_DOMAINS.get(name, ("poi", "medical")))
    clean = run_cases(agent, [Case(t) for t in chosen])
    perturbed = run_cases(agent, [Case(t, (spec,)) for t in chosen])
    share = lambda eps: 100.0 * sum(e.success for e in eps) / max(1, len(eps))
    return Bite(name, cls.tier, spec.severity, len(chosen), share(clean), share(perturbed), cls.unsolvable, cls.mild)
