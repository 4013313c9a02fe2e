"""``check_domain``: the proof that a world can be trusted, before an agent is measured on it.

Every task of the world, under every registered perturbation at every severity: the perturbation-aware
oracle on each case it applies to (it must solve a solvable case and refuse an unsolvable one: else a
failure is the perturbation's or the world's fault, never the agent's), the static baseline on the same
cases and on the clean tasks (how hard each perturbation bites a blind agent), and, for each case it does
not apply to, the perturbation's reason. Episodes go through the evaluation core's cache, a window of
them at a time, as ``evaluate`` runs them. ``openagent check-domain`` prints it; the project's matrix in
``docs/perturbations-matrix.md`` is its output on our worlds (:mod:`sandbox.audits.domain_matrix`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import SANDBOX_VERSION, Case
from sandbox.episode import START_FAILED, Episode
from sandbox.errors import UsageError
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EPISODES, EpisodeCache, prepare
from sandbox.evaluation.draw import DomainSpec, TierSpec, check_tasks, domain_names, perturbation_classes
from sandbox.evaluation.runner import Health, WorldFailed
from sandbox.files import write_atomically
from sandbox.perturbations.base import TIERS, Perturbation, Pool
from sandbox.task import Task

SCHEMA = "pytest-openagent/check-domain"
SCHEMA_VERSION = 1


@dataclass
class Cell:
    """One perturbation at one severity over every task: what it applied to and how the two agents fared."""

    perturbation: str
    tier: str
    severity: int
    tasks: int = 0
    after: int = 0
    """The onset of a drift cell (``--drift``): the perturbation starts after this turn; 0 before the first."""
    applied: int = 0
    solvable: int = 0
    """Applied cases that stay solvable (the others are to be refused)."""
    oracle_solved: int = 0
    """Applied solvable cases the oracle solved."""
    oracle_refused: int = 0
    """Applied unsolvable cases the oracle rightly refused."""
    static_success: int = 0
    """Applied cases the static baseline got right (solved, or refused where that was right)."""
    not_applied: dict[str, int] = field(default_factory=dict)
    """Why it did not apply: each reason with the number of tasks it held for."""

    @property
    def unsolvable(self) -> int:
        return self.applied - self.solvable

    @property
    def oracle_right(self) -> int:
        return self.oracle_solved + self.oracle_refused


@dataclass(frozen=True)
class Failure:
    """A case the oracle got wrong: ``case`` is ``Case.describe()``, ``explain`` the episode's ``explain()``."""

    case: str
    perturbation: str
    severity: int
    solvable: bool
    outcome: str
    explain: str


@dataclass
class DomainCheck:
    """What :func:`check_domain` found; ``ok`` when the oracle is right on every case (clean and applied)."""

    domain: str
    split: str
    tasks: int
    oracle_clean: int
    """Clean tasks the oracle got right (every one, on a world whose tasks are sound)."""
    static_clean: int
    cells: list[Cell]
    failures: list[Failure]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def tiers(self) -> dict[str, tuple[int, int]]:
        """Per tier (in order): the static baseline's successes and the applied cases they are out of."""
        out: dict[str, tuple[int, int]] = {}
        for tier in TIERS:
            cells = [c for c in self.cells if c.tier == tier and c.applied]
            if cells:
                out[tier] = (sum(c.static_success for c in cells), sum(c.applied for c in cells))
        return out

    def table(self) -> str:
        from tabulate import tabulate

        body = [
            [c.tier, c.perturbation + (f" after={c.after}" if c.after else ""), c.severity, f"{c.applied}/{c.tasks}",
             _ratio(c.oracle_solved, c.solvable),
             _ratio(c.oracle_refused, c.unsolvable), _pct(c.static_success, c.applied)]
            for c in self.cells
        ]  # fmt: skip
        headers = ["tier", "perturbation", "s", "applied", "oracle solved", "oracle refused", "static"]
        return tabulate(body, headers=headers, disable_numparse=True)

    def reasons(self) -> list[str]:
        """Each perturbation's reasons for not applying, with the tasks each held for, at each severity."""
        found: dict[tuple[str, str], list[str]] = {}
        for c in self.cells:
            for why, n in c.not_applied.items():
                onset = f" after={c.after}" if c.after else ""
                found.setdefault((c.perturbation, why), []).append(f"s={c.severity}{onset}: {n}")
        return [f"{name} ({', '.join(counts)} of {self.tasks} tasks): {why}" for (name, why), counts in found.items()]

    def summary(self) -> str:
        """The lines under the table: the clean run, the static baseline per tier, the verdict."""
        applied = sum(c.applied for c in self.cells)
        right = sum(c.oracle_right for c in self.cells)
        lines = [
            f"clean: {self.tasks} tasks; oracle {_ratio(self.oracle_clean, self.tasks)}, "
            f"static {_pct(self.static_clean, self.tasks)}",
            "static per tier: "
            + (", ".join(f"{t} {_pct(k, n)} of {n}" for t, (k, n) in self.tiers().items()) or "nothing applied"),
            f"oracle right on {right} of {applied} applied cases",
        ]
        return "\n".join(lines)

    def text(self, show: int = 10, json_file: str | None = None) -> str:
        """All that ``openagent check-domain`` prints: a header, the matrix, why perturbations did not apply, the
        summary, the explanation of the first ``show`` failures and the verdict."""
        meta = self.meta
        lines = [
            f"openagent check-domain: {meta.get('spec', self.domain)}, {self.tasks} {self.split} tasks, "
            f"seed={meta.get('seed')}; {meta.get('episodes_run')} episodes run, {meta.get('episodes_cached')} from "
            f"the cache, {meta.get('wall_s', 0):.1f} s",
            self.table(),
        ]
        if reasons := self.reasons():
            lines.append("does not apply:\n" + "\n".join(f"  {line}" for line in reasons))
        lines.append(self.summary())
        lines += [f"\noracle wrong ({f.outcome}) on {f.case}:\n{f.explain}" for f in self.failures[:show]]
        if len(self.failures) > show:
            where = f" (all in {json_file})" if json_file else " (--json FILE keeps them all)"
            lines.append(f"\n... and {len(self.failures) - show} more failing cases{where}")
        if json_file:
            lines.append(f"matrix written to {json_file}")
        if self.failures:
            lines.append(f"FAIL: the oracle is wrong on {len(self.failures)} cases: the world (or a perturbation) is "
                         "at fault, not an agent; fix it before measuring agents on it")  # fmt: skip
        else:
            lines.append("OK: the oracle is right on every case")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        cells = [{**asdict(c), "unsolvable": c.unsolvable} for c in self.cells]
        return {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "domain": self.domain, "split": self.split,
            "tasks": self.tasks, "oracle_clean": self.oracle_clean, "static_clean": self.static_clean, "ok": self.ok,
            "static_per_tier": {t: {"success": k, "applied": n} for t, (k, n) in self.tiers().items()},
            "cells": cells, "failures": [asdict(f) for f in self.failures], "meta": self.meta,
        }  # fmt: skip

    def to_json(self, path: str | Path) -> None:
        write_atomically(Path(path), json.dumps(self.to_dict(), indent=1) + "\n")


def _ratio(k: int, n: int) -> str:
    return "-" if n == 0 else f"{k}/{n}"


def _pct(k: int, n: int) -> str:
    return "-" if n == 0 else f"{100 * k / n:.0f}%"


DRIFT_ONSETS = (1, 2)
"""The onsets a drift check runs each perturbation that can drift at: after the first turn, and the second."""


def check_domain(
    domain: DomainSpec,
    *,
    split: str = "test",
    tiers: TierSpec = "all",
    names: Iterable[str] | None = None,
    families: Sequence[str] | None = None,
    per_family: int | None = None,
    skip: Iterable[str] = (),
    seed: int = 0,
    pool: Pool = "eval",
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    batch_size: int = 256,
    max_steps: int | None = None,
    progress: Callable[[str], None] | None = None,
    drift: bool = False,
) -> DomainCheck:
    """Run the oracle and the static baseline over every task of ``domain`` (see :func:`check_tasks`), clean and
    under every perturbation of ``tiers`` (or ``names``) at every severity, seeded ``seed``, from ``pool``.

    Episodes are cached under ``cache_dir`` (``None`` turns the disk cache off), as ``evaluate`` caches them, and
    dropped from memory once counted, so a world of thousands of cases runs in little memory. ``progress`` gets a
    line as each perturbation is done. ``drift`` adds, for each perturbation that can start mid-episode, cells at
    the onsets :data:`DRIFT_ONSETS` (every severity)."""
    from sandbox.agents import OracleAgent
    from sandbox.agents.static import StaticAgent

    started = time.perf_counter()
    cache = EpisodeCache(prepare(Path(cache_dir)) / EPISODES if cache_dir is not None else None)
    classes = perturbation_classes(tiers, names)
    tasks = check_tasks(domain, split, families, per_family, skip)
    oracle, static = OracleAgent(), StaticAgent()

    def run(agent: Any, cases: list[Case]) -> list[Episode]:
        episodes = cache.run(agent, cases, max_steps, window=batch_size)
        cache.forget()
        world = Health()
        world.add(episodes)
        if world.world_failure() is not None:  # the oracle is not wrong where the server failed
            raise WorldFailed(world.world_failure())
        return episodes

    clean = [Case(t) for t in tasks]
    oracle_clean, static_clean = run(oracle, clean), run(static, clean)
    opening = Health()
    opening.add(oracle_clean)
    cause = opening.causes.most_common(1)[0][0] if opening.causes else ""
    if cause.startswith(START_FAILED) and opening.causes[cause] == len(oracle_clean):
        raise UsageError(f"no episode of {', '.join(domain_names(domain))} starts: {cause}; fix the domain")
    failures = [_failure(c, e, "clean", 0) for c, e in zip(clean, oracle_clean, strict=True) if not e.success]
    cells = []
    for cls in classes:
        onsets = (0, *DRIFT_ONSETS) if drift and cls.can_drift() else (0,)
        for severity, after in ((s, a) for a in onsets for s in cls.severities()):
            spec = cls(severity=severity, pool=pool, seed=seed, after=after)
            cell, cases = _cases(spec, tasks)
            for case, by_oracle, by_static in zip(cases, run(oracle, cases), run(static, cases), strict=True):
                solvable = bool(by_oracle.solvable)  # set from the task where no perturbation ruled
                cell.solvable += solvable
                cell.oracle_solved += solvable and by_oracle.success
                cell.oracle_refused += not solvable and by_oracle.success
                cell.static_success += by_static.success
                if not by_oracle.success:
                    failures.append(_failure(case, by_oracle, cls.name, severity))
            cells.append(cell)
        if progress is not None:
            done = [c for c in cells if c.perturbation == cls.name]
            progress(f"{cls.name}: {sum(c.applied for c in done)} cases applied, oracle right on "
                     f"{sum(c.oracle_right for c in done)}")  # fmt: skip
    meta = {
        "seed": seed, "pool": pool, "per_family": per_family, "families": list(families) if families else None,
        "skipped_tasks": sorted(set(skip)), "max_steps": max_steps, "drift": drift, "sandbox_version": SANDBOX_VERSION,
        "oracle": fingerprint(oracle), "static": fingerprint(static), "episodes_run": cache.misses,
        "episodes_cached": cache.hits, "wall_s": round(time.perf_counter() - started, 2),
    }  # fmt: skip
    name = domain_names(domain)
    return DomainCheck(
        domain=", ".join(name), split=split, tasks=len(tasks), oracle_clean=sum(e.success for e in oracle_clean),
        static_clean=sum(e.success for e in static_clean), cells=cells, failures=failures, meta=meta,
    )  # fmt: skip


def _cases(spec: Perturbation, tasks: list[Task]) -> tuple[Cell, list[Case]]:
    cell = Cell(spec.name, spec.tier, spec.severity, tasks=len(tasks), after=spec.after)
    cases, reasons = [], Counter[str]()
    for task in tasks:
        if spec.applies_to(task):
            cases.append(Case(task, (spec,)))
        else:
            reasons[spec.why_not(task)] += 1
    cell.applied = len(cases)
    cell.not_applied = dict(reasons.most_common())
    return cell, cases


def _failure(case: Case, episode: Episode, perturbation: str, severity: int) -> Failure:
    return Failure(case.describe(), perturbation, severity, bool(episode.solvable), episode.outcome, episode.explain())
