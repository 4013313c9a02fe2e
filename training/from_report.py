"""A report's failing cases as PAFT rows: the loop from "find failure" back to "train on it".

A failing case of a report (a pytest session's measurement and its property-test search, or ``openagent
eval --json``) names its task, its perturbations and their severities. Each becomes up to ``per_failure``
training cases: **train-split** tasks of the same domain, family and solvability, under the same
perturbations at the same severities, drawn from the **train** pool with fresh seeds. The failing
case itself is not replayed: its task is from a held-out split and its texts from the eval pool, and
training on either would leak what a later gate measures. The rows are the perturbation-aware oracle's
trajectories on those cases, kept only where the oracle succeeds, written as :mod:`training.export` rows.

A record names its task's domain. A record of a report written before records did has the report's
domain instead (its measurement's, or every one known here when it names none), and the summary counts
them. A report never decides what code runs: a ``module:attribute`` domain it names is imported only when
the user names the same spec (``--domain``); else the conversion stops with an error saying so.

A failure gives no row, and is counted under a reason, when its domain is not available here, a
perturbation of its stack is not registered or cannot be rebuilt from the record, its family has no
train-split task the stack applies to, its tasks are solvable but have no gold plan (a user's domain
that judges by ``check`` alone: the oracle has nothing to follow), or the oracle fails every one of its
train cases.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sandbox.errors import UsageError
from sandbox.seeds import child_seed

Reason = Literal["unknown_domain", "unknown_perturbation", "no_train_task", "no_gold_plan", "oracle_failed"]
REASONS: dict[str, str] = {
    "unknown_domain": "its domain is not available here",
    "unknown_perturbation": "a perturbation of its stack is not registered here or cannot be rebuilt",
    "no_train_task": "no train-split task of its family and solvability takes its perturbations",
    "no_gold_plan": "its tasks are solvable but have no gold plan for the oracle to follow",
    "oracle_failed": "the oracle solved none of its train cases",
}


@dataclass
class Conversion:
    """What became of a report's failures: the rows, and each failure that gave none, by reason."""

    records: int
    failures: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    cases_failed_by_oracle: int = 0
    domain_from_report: int = 0
    """Failures whose record names no domain (an older report): the report's domain stood in for theirs."""

    def summary(self) -> dict[str, Any]:
        used = len({r["meta"]["failure"]["case"] for r in self.rows})
        return {
            "records": self.records, "failures": self.failures, "failures_with_rows": used, "rows": len(self.rows),
            "cases_failed_by_oracle": self.cases_failed_by_oracle, "skipped": dict(sorted(self.skipped.items())),
            "domain_from_report": self.domain_from_report,
        }  # fmt: skip


def failures(report: Any) -> list[Any]:
    """The report's failing records, the measurement's and the search's, each case once."""
    records = [*report.records, *(report.search.records if report.search is not None else [])]
    unique: dict[str, Any] = {}
    for record in records:
        if not record.success:
            unique.setdefault(record.case, record)
    return list(unique.values())


def convert(report: Any, per_failure: int = 2, seed: int = 0, domains: Sequence[str] = ()) -> Conversion:
    """The PAFT rows of ``report``'s failures (see the module's docstring), with what was skipped and why.

    ``domains`` are the user's domain specs (names or ``module:attribute``), loaded first; only these may
    import code. A ``module:attribute`` domain the report names and ``domains`` does not is a ``UsageError``.
    """
    from sandbox.case import Case
    from training.dataset import gold_trajectories
    from training.export import chat_row

    if per_failure < 1:
        raise UsageError(f"--per-failure must be at least 1, got {per_failure}")
    _load_domains(domains)
    fallback = _report_domains(report.meta.get("domain"), domains)
    known = _known_names()
    failing = failures(report)
    n_records = len(report.records) + (len(report.search.records) if report.search is not None else 0)
    result = Conversion(records=n_records, failures=len(failing))
    cases: list[Any] = []
    source: dict[int, Any] = {}
    for record in failing:
        if record.domain is None:
            result.domain_from_report += 1
            domain = _domain_of(record.task, fallback) if fallback else None
        else:
            domain = record.domain if record.domain in known else None
        planned = _train_cases(record, domain, per_failure, seed)
        if isinstance(planned, str):
            result.skipped[planned] += 1
            continue
        for task, stack in planned:
            case = Case(task, stack)
            cases.append(case)
            source[id(case)] = record
    trajectories = gold_trajectories(cases) if cases else []
    result.cases_failed_by_oracle = len(cases) - len(trajectories)
    solved: set[str] = set()
    for t in trajectories:
        record = source[id(t.case)]
        solved.add(record.case)
        row = chat_row(t)
        row["meta"]["failure"] = {"case": record.case, "label": record.label, "outcome": record.outcome,
                                  "test": record.test}  # fmt: skip
        result.rows.append(row)
    unsolved = len({r.case for r in source.values()} - solved)
    if unsolved:
        result.skipped["oracle_failed"] = unsolved
    return result


def from_report(
    report_path: str | Path, out: str | Path, per_failure: int = 2, seed: int = 0, domains: Sequence[str] = ()
) -> dict[str, Any]:
    """Read the report at ``report_path``, write its failures' PAFT rows to ``out``; the summary (with the
    report's own ``domain``, which stood in for records that name none)."""
    from sandbox.evaluation.report import Report
    from training.export import write_jsonl

    report = Report.load(report_path)
    conversion = convert(report, per_failure, seed, domains)
    write_jsonl(conversion.rows, out)
    return {**conversion.summary(), "path": str(out), "report_domain": report.meta.get("domain")}


# --- from a record to train cases ------------------------------------------------------------------


def _load_domains(specs: Sequence[str]) -> None:
    """Register the domains the user named (a ``module:attribute`` is imported: the user chose it)."""
    from sandbox.domains import get_domain

    for spec in specs:
        try:
            get_domain(spec)
        except (LookupError, ValueError, TypeError) as exc:
            raise UsageError(f"--domain {spec!r}: {exc}") from None


def _report_domains(spec: Any, allowed: Sequence[str]) -> tuple[str, ...] | None:
    """The report's domains by name, for records that name none: every one known here if it names none;
    ``None`` if one cannot be loaded here. A ``module:attribute`` is used only if it is one of ``allowed``."""
    from sandbox.domains import domain_names as known
    from sandbox.evaluation.draw import domain_names

    if not spec:
        return tuple(known())
    items = [spec] if isinstance(spec, str) else spec
    if not isinstance(items, list) or not all(isinstance(d, str) for d in items):
        raise UsageError(f"the report's meta.domain is neither a domain's name nor a list of names: {spec!r}")
    for item in items:
        if ":" in item and item not in allowed:
            module = item.partition(":")[0]
            raise UsageError(
                f"the report names the domain {item!r}, which would import the module {module!r}; a report does "
                f"not choose what code runs here: if you trust {module!r}, pass --domain {item}"
            )
    try:
        return domain_names(items)
    except (LookupError, ValueError, ImportError):
        return None


def _known_names() -> set[str]:
    """The domains known here by name (registered, built in, or an installed entry point): a record's
    domain is looked up among these, never imported as a module."""
    from sandbox.domains import domain_names

    return {name for name in domain_names() if ":" not in name}


def _domain_of(task_id: str, domains: Sequence[str]) -> str | None:
    """Task ids carry their domain's name (``poi-train-phone-4bf0e326``, ``bookshop-title``)."""
    return max((name for name in domains if task_id.startswith(f"{name}-")), key=len, default=None)


def _train_pool(domain: str) -> tuple | None:
    from sandbox.evaluation.draw import task_pool

    try:
        return task_pool((domain,), "train")
    except (LookupError, ValueError, ImportError):  # a lazy domain whose package or server is missing here
        return None


def _stacks(record: Any, count: int, seed: int) -> list[tuple[Any, ...]] | None:
    """``count`` train-pool copies of the record's perturbation stack (as the record keeps it: names,
    severities, parameters), each with its own seeds; ``None`` if one cannot be rebuilt here."""
    from pydantic import ValidationError

    from sandbox.evaluation.draw import SEEDS
    from sandbox.perturbations.registry import from_dict

    if len(record.stack) != len(record.perturbations):  # a report written before records kept their stack
        return None
    try:
        return [
            tuple(
                from_dict({**spec, "pool": "train",
                           "seed": child_seed(seed, "from-report", record.case, j, i) % SEEDS})
                for i, spec in enumerate(record.stack)
            )
            for j in range(count)
        ]  # fmt: skip
    except (KeyError, ValidationError):
        return None


def _train_cases(record: Any, domain: str | None, k: int, seed: int) -> list[tuple] | Reason:
    """Up to ``k`` (task, stack) pairs of train-split tasks of ``domain`` for the record, or why there are none."""
    pool = _train_pool(domain) if domain is not None else None
    if pool is None:
        return "unknown_domain"
    stacks = _stacks(record, k, seed)
    if stacks is None:
        return "unknown_perturbation"
    twins = [t for t in pool if t.family == record.family and t.solvable == record.clean_solvable]
    random.Random(child_seed(seed, "from-report", record.case)).shuffle(twins)
    if twins and all(t.solvable and not t.plan for t in twins):
        return "no_gold_plan"
    chosen: list[tuple] = []
    for task in twins:
        stack = stacks[len(chosen)]
        if task.solvable and not task.plan:
            continue
        if all(p.applies_to(task) for p in stack):
            chosen.append((task, stack))
            if len(chosen) == k:
                break
    return chosen or "no_train_task"
