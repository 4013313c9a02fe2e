"""The robustness report: one record per episode, figures per tier and per perturbation.

A record pairs a perturbed episode with its clean twin, so Δ compares the same tasks. The report
sorts its records, so the same episodes give the same figures whatever order they arrived in
(serially or from pytest-xdist workers). Gates read reports (:func:`sandbox.evaluation.check`,
:func:`sandbox.evaluation.compare`); a report knows nothing of gates.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.errors import UsageError
from sandbox.evaluation.cost import cost_summary
from sandbox.evaluation.detection import Detection, detection, detection_table, notice
from sandbox.evaluation.sensitivity import Dose, sensitivity, sensitivity_table
from sandbox.evaluation.worst_case import WorstCase, worst_table
from sandbox.files import write_atomically
from sandbox.metrics import PairedDelta, Rate
from sandbox.perturbations.base import TIERS
from sandbox.usage import tokens

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.episode import Episode

SCHEMA = "pytest-openagent/report"
SCHEMA_VERSION = 4
"""2: rows hold ``wrong_refusal``; a report may hold its ``search`` (the examples property tests explored).
3: each record names its task's domain (``domain``); a record of an older report has ``domain=None``; rows hold
``repeated_write`` and ``fails_clean`` (failures whose clean twin fails too). 4: the report holds its
``sensitivity`` (success against severity per perturbation) and the property tests' ``failures``. A report may hold
``worst``, the worst case a search found per tier (:class:`~sandbox.evaluation.worst_case.WorstCase`)."""


NONE = Rate(0, 0)
"""A rate of nothing: a row that counts no such case (the clean twins meet no fault)."""

DRIFT = "-drift"
"""What a row's scope ends with when it counts drift cases (``perception-drift``), beside the static ones."""


@dataclass(frozen=True)
class Record:
    """What the report keeps of one perturbed episode and its clean twin (plain data: JSON and xdist-safe)."""

    test: str
    agent: str
    case: str
    label: str
    task: str
    family: str
    n_calls: int
    perturbations: tuple[str, ...]
    tier: str | None
    solvable: bool
    outcome: str
    success: bool
    tool_errors: int
    calls: int
    clean_outcome: str
    clean_success: bool
    clean_solvable: bool
    clean_tool_errors: int
    clean_calls: int
    stack: tuple[dict[str, Any], ...] = ()
    """The perturbations as ``Perturbation.to_dict()`` gives them, so that a tool can rebuild them."""
    domain: str | None = None
    """The registered name of the task's domain; ``None`` in a report written before records kept it."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    clean_prompt_tokens: int = 0
    clean_completion_tokens: int = 0
    """What the episode and its clean twin cost their agent in tokens (:mod:`sandbox.usage`)."""
    tokens_source: str = ""
    """Where the episode's tokens come from: ``engine``, ``tokenizer`` or ``estimated`` (``""`` in older reports)."""
    noticed: bool | None = None
    """Whether the agent noticed every fault its episode met (a transient error, a rate limit, a moved tool, a wrong
    answer, a fault of its own model); ``None`` where it met none (:mod:`sandbox.evaluation.detection`)."""

    @classmethod
    def of(cls, test: str, agent: str, case: Case, episode: Episode, clean: Episode) -> Record:
        tiers = [p.tier for p in case.perturbations]
        used, twin = tokens(episode), tokens(clean)
        return cls(
            test=test, agent=agent, case=case.key(), label=case.describe(), task=case.task.id,
            family=case.task.family, n_calls=case.task.n_calls,
            perturbations=tuple(p.name for p in case.perturbations),
            tier=max(tiers, key=TIERS.index) if tiers else None,
            solvable=_solvable(case, episode), outcome=episode.outcome, success=episode.success,
            tool_errors=episode.tool_errors, calls=len(episode.calls),
            clean_outcome=clean.outcome, clean_success=clean.success, clean_solvable=case.task.solvable,
            clean_tool_errors=clean.tool_errors, clean_calls=len(clean.calls),
            stack=tuple(p.to_dict() for p in case.perturbations), domain=case.task.domain,
            noticed=notice(episode),
            prompt_tokens=used["prompt"], completion_tokens=used["completion"], tokens_source=used["source"],
            clean_prompt_tokens=twin["prompt"], clean_completion_tokens=twin["completion"],
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["perturbations"] = list(self.perturbations)
        data["stack"] = list(self.stack)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        if not isinstance(data, dict):
            raise TypeError(f"a record is a JSON object, got {type(data).__name__}")
        for name, kinds in _RECORD_TYPES.items():
            if name in data and not (isinstance(data[name], kinds) and not _bool_for_int(data[name], kinds)):
                raise TypeError(f"record {data.get('label', '?')!r}: {name} is {data[name]!r}, expected "
                                f"{' or '.join(k.__name__ for k in kinds)}")  # fmt: skip
        return cls(**{**data, "perturbations": tuple(data["perturbations"]), "stack": tuple(data.get("stack", ()))})

    @property
    def drift(self) -> bool:
        """Whether a perturbation of the case starts mid-episode (an onset, ``after``)."""
        return any(p.get("after") for p in self.stack)

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.test, self.agent, self.case)


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "test": (str,), "agent": (str,), "case": (str,), "label": (str,), "task": (str,), "family": (str,),
    "n_calls": (int,), "perturbations": (list, tuple), "tier": (str, type(None)), "solvable": (bool,),
    "outcome": (str,), "success": (bool,), "tool_errors": (int,), "calls": (int,), "clean_outcome": (str,),
    "clean_success": (bool,), "clean_solvable": (bool,), "clean_tool_errors": (int,), "clean_calls": (int,),
    "stack": (list, tuple), "domain": (str, type(None)),
}  # fmt: skip
"""What each field of a record read from JSON must be: a report edited by hand or by another tool is refused with
the field named, not met later as a ``TypeError`` deep in a sum."""


def _bool_for_int(value: Any, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, bool) and bool not in kinds


@dataclass(frozen=True)
class Failure:
    """A case a property test failed on, as Hypothesis left it (shrunk): its record and the episode's
    ``explain()`` trajectory."""

    record: Record
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {"record": self.record.to_dict(), "explanation": self.explanation}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        return cls(Record.from_dict(data["record"]), str(data["explanation"]))


@dataclass(frozen=True)
class Row:
    """The figures of one scope: a tier, a perturbation, ``clean`` (the clean twins) or ``all``."""

    scope: str
    kind: str
    episodes: int
    clean: Rate
    perturbed: Rate
    tool_errors: Rate
    refusal: Rate
    refused_solvable: Rate
    delta: PairedDelta
    """Perturbed minus clean success on the same tasks (each case against its clean twin)."""
    repeated_writes: Rate
    """Cases whose agent did a write more often than the gold plan (``repeated_write``), of all cases."""
    fails_clean: Rate
    """Failures whose clean twin fails too (not the perturbation's doing), of all failures."""
    deceived: Rate = NONE
    """Cases that ended ``deceived`` (the agent reported or acted on a wrong value a tool told), of all cases."""
    noticed: Rate = NONE
    """Cases whose agent noticed every fault it met (:mod:`~sandbox.evaluation.detection`), of those that met one."""

    def value(self, metric: str) -> float:
        """A gate metric: rates as fractions, ``delta`` in points, ``episodes`` a count."""
        return self.estimate(metric)[0]

    def estimate(self, metric: str) -> tuple[float, float, float, int]:
        """A gate metric's value, the low and high ends of its 95% interval, and the n it rests on."""
        if metric == "episodes":
            return (float(self.episodes), float(self.episodes), float(self.episodes), self.episodes)
        if metric == "delta":
            if self.kind == "clean":
                return (0.0, 0.0, 0.0, self.episodes)
            low, high = self.delta.interval
            return (self.delta.points, low, high, self.delta.n)
        rate = {
            "success": self.perturbed, "clean": self.clean, "refusal": self.refusal,
            "tool_errors": self.tool_errors, "wrong_refusal": self.refused_solvable,
            "repeated_write": self.repeated_writes, "deceived": self.deceived, "noticed": self.noticed,
        }[metric]  # fmt: skip
        low, high = rate.interval
        return (rate.value, low, high, rate.n)

    def to_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            low, high = r.interval
            return {"k": r.k, "n": r.n, "value": _num(r.value), "low": _num(low), "high": _num(high)}

        low, high = self.delta.interval
        return {
            "scope": self.scope, "kind": self.kind, "episodes": self.episodes,
            "clean": rate(self.clean), "success": rate(self.perturbed),
            "delta": {"points": _num(self.delta.points), "low": _num(low), "high": _num(high)},
            "tool_errors": rate(self.tool_errors), "refusal": rate(self.refusal),
            "wrong_refusal": rate(self.refused_solvable), "repeated_write": rate(self.repeated_writes),
            "fails_clean": rate(self.fails_clean), "deceived": rate(self.deceived), "noticed": rate(self.noticed),
        }  # fmt: skip


def _solvable(case: Case, episode: Episode) -> bool:
    solvable = getattr(episode, "solvable", None)
    return case.solvable if solvable is None else bool(solvable)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _row(scope: str, kind: str, records: list[Record]) -> Row:
    if kind == "clean":
        twins = list({r.task: r for r in records}.values())
        success = Rate(sum(r.clean_success for r in twins), len(twins))
        unsolvable = [r for r in twins if not r.clean_solvable]
        solvable = [r for r in twins if r.clean_solvable]
        return Row(
            scope, kind, len(twins), success, success,
            Rate(sum(r.clean_tool_errors for r in twins), sum(r.clean_calls for r in twins)),
            Rate(sum(r.clean_outcome == "refused" for r in unsolvable), len(unsolvable)),
            Rate(sum(r.clean_outcome == "wrong_refusal" for r in solvable), len(solvable)),
            PairedDelta.of((r.clean_success, r.clean_success) for r in twins),
            Rate(sum(r.clean_outcome == "repeated_write" for r in twins), len(twins)),
            _fails_clean([(r.clean_success, r.clean_success) for r in twins]),
        )  # fmt: skip
    unsolvable = [r for r in records if not r.solvable]
    solvable = [r for r in records if r.solvable]
    return Row(
        scope, kind, len(records),
        Rate(sum(r.clean_success for r in records), len(records)),
        Rate(sum(r.success for r in records), len(records)),
        Rate(sum(r.tool_errors for r in records), sum(r.calls for r in records)),
        Rate(sum(r.outcome == "refused" for r in unsolvable), len(unsolvable)),
        Rate(sum(r.outcome == "wrong_refusal" for r in solvable), len(solvable)),
        PairedDelta.of((r.success, r.clean_success) for r in records),
        Rate(sum(r.outcome == "repeated_write" for r in records), len(records)),
        _fails_clean([(r.success, r.clean_success) for r in records]),
        Rate(sum(r.outcome == "deceived" for r in records), len(records)),
        Rate(sum(bool(r.noticed) for r in records), sum(r.noticed is not None for r in records)),
    )  # fmt: skip


def _fails_clean(pairs: list[tuple[bool, bool]]) -> Rate:
    failures = [clean for success, clean in pairs if not success]
    return Rate(sum(not clean for clean in failures), len(failures))


@dataclass
class Report:
    """Figures over a set of records. Built by the pytest session, by ``evaluate`` or from JSON.

    A pytest session's report is its fixed measurement (what gates read), and it keeps the examples
    the property tests explored apart in ``search``: those depend on what Hypothesis tried (it stops
    at a failure, shrinks toward failures and replays them first), so they are shown, never gated.
    """

    records: list[Record]
    meta: dict[str, Any] = field(default_factory=dict)
    search: Report | None = None
    failures: list[Failure] = field(default_factory=list)
    """The cases the property tests failed on, one per failed test (a pytest session's; ``evaluate`` has none)."""
    worst: list[WorstCase] = field(default_factory=list)
    """The worst case a worst-case search found per tier (``--openagent-search worst``, ``openagent eval --worst``)."""

    def __post_init__(self) -> None:
        unique = {r.identity: r for r in self.records}
        self.records = sorted(unique.values(), key=lambda r: r.identity)

    @property
    def perturbed(self) -> list[Record]:
        return [r for r in self.records if r.perturbations]

    def rows(self) -> list[Row]:
        """``clean``, then each tier followed by its perturbations, then its drift cases (``<tier>-drift``, and their
        perturbations ``<name>-drift``) where it has any, then ``all``."""
        if not self.records:
            return []
        rows = [_row("clean", "clean", self.records)]
        perturbed = self.perturbed
        for tier in TIERS:
            for suffix, kind in (("", "tier"), (DRIFT, "drift")):
                in_tier = [r for r in perturbed if r.tier == tier and r.drift == bool(suffix)]
                if not in_tier:
                    continue
                rows.append(_row(tier + suffix, kind, in_tier))
                names = dict.fromkeys(n for r in in_tier for n in r.perturbations)
                rows += [_row(n + suffix, "perturbation", [r for r in in_tier if n in r.perturbations]) for n in names]
        if perturbed:
            rows.append(_row("all", "all", perturbed))
        return rows

    def row(self, scope: str) -> Row | None:
        return next((r for r in self.rows() if r.scope == scope), None)

    def sensitivity(self) -> list[Dose]:
        """Success against severity for each perturbation, from the clean twins (severity 0) up."""
        return sensitivity(self.perturbed)

    def sensitivity_table(self) -> str:
        return sensitivity_table(self.sensitivity())

    def detection(self) -> list[Detection]:
        """Per perturbation that scores it: how often the agent noticed, recovered, or went on."""
        return detection(self.perturbed)

    def detection_table(self) -> str:
        return detection_table(self.detection())

    def table(self) -> str:
        from tabulate import tabulate

        def pct(rate: Rate) -> str:
            return "-" if rate.n == 0 else f"{rate.value:.1%}"

        def counted(rate: Rate) -> str:
            return "-" if rate.n == 0 else f"{rate.value:.1%} ({rate.k}/{rate.n})"

        body = []
        for row in self.rows():
            indent = "  " if row.kind == "perturbation" else ""
            delta = "" if row.kind == "clean" else str(row.delta)
            success = "" if row.kind == "clean" else pct(row.perturbed)
            body.append(
                [indent + row.scope, row.episodes, pct(row.clean), success, delta, pct(row.tool_errors),
                 counted(row.refusal), counted(row.refused_solvable), counted(row.repeated_writes)]
            )  # fmt: skip
        headers = ["scope", "episodes", "clean", "perturbed", "Δ points [95% CI]", "tool errors", "refusal"]
        headers += ["refused solvable", "repeated writes"]
        try:
            text = tabulate(body, headers=headers, disable_numparse=True, preserve_whitespace=True)
        except TypeError:  # tabulate < 0.10 strips the indent of perturbation rows
            text = tabulate(body, headers=headers, disable_numparse=True)
        everything = self.row("all")
        if everything is not None and everything.fails_clean.k:
            shared = everything.fails_clean
            text += (
                f"\nfailures not caused by a perturbation: {shared.k} of {shared.n} perturbed failures fail with no "
                "perturbation too (their clean twin fails)"
            )
        if self.worst:
            means = {row.scope: row.perturbed for row in self.rows() if row.kind == "tier"}
            text += "\n" + worst_table(self.worst, means, {r.agent for r in self.records})
        sequential = self.meta.get("sequential")
        if isinstance(sequential, dict) and "cases_run" in sequential:
            text += (
                f"\nsequential gate: {sequential['cases_run']} of the sample's {sequential.get('cases_drawn')} cases "
                f"run (rounds of {sequential.get('round')} per tier); each criterion stopped once its confidence "
                "sequence settled it"
            )
        skipped = self.meta.get("tiers_skipped")
        if skipped:
            domain = self.meta.get("domain")
            domain = domain if isinstance(domain, str) else ", ".join(map(str, domain or ()))
            them = "it" if len(skipped) == 1 else "them"
            text += f"\nskipped: {', '.join(skipped)} (no perturbation of {them} applies to {domain}'s tasks)"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "meta": self.meta,
            "rows": [r.to_dict() for r in self.rows()],
            "records": [r.to_dict() for r in self.records],
            "sensitivity": [d.to_dict() for d in self.sensitivity()],
            "failures": [f.to_dict() for f in self.failures],
            "cost": cost_summary(self),
        }
        if found := self.detection():
            data["detection"] = [d.to_dict() for d in found]
        if self.search is not None:
            data["search"] = {k: v for k, v in self.search.to_dict().items() if k in ("meta", "rows", "records")}
        if self.worst:
            data["worst"] = [w.to_dict() for w in self.worst]
        return data

    def to_json(self, path: str | Path | None = None) -> str:
        """The report as JSON; with ``path``, also written there atomically (a reader never sees half a file)."""
        text = json.dumps(self.to_dict(), indent=1, sort_keys=True)
        if path is not None:
            write_atomically(Path(path), text + "\n")
        return text

    @classmethod
    def from_dict(cls, data: Any) -> Report:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        if got != SCHEMA or not isinstance(data.get("schema_version"), int):
            raise UsageError(f"not a pytest-openagent report (expected schema {SCHEMA!r}, got {got!r})")
        if data["schema_version"] > SCHEMA_VERSION:
            raise UsageError(
                f"report schema version {data['schema_version']} is newer than this pytest-openagent "
                f"reads ({SCHEMA_VERSION}); upgrade pytest-openagent"
            )
        try:
            search = data.get("search")
            return cls(
                [Record.from_dict(r) for r in data.get("records", [])],
                dict(data.get("meta", {})),
                None if search is None else cls([Record.from_dict(r) for r in search["records"]], search["meta"]),
                [Failure.from_dict(f) for f in data.get("failures", [])],
                [WorstCase.from_dict(w) for w in data.get("worst", [])],
            )
        except (TypeError, KeyError, AttributeError) as exc:
            raise UsageError(f"the report's records are malformed ({type(exc).__name__}: {exc})") from None

    @classmethod
    def load(cls, path: str | Path) -> Report:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot read report {str(path)!r}: {exc.strerror}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"report {str(path)!r} is not JSON: {exc}") from None
        return cls.from_dict(data)

    def __str__(self) -> str:
        return self.table()
