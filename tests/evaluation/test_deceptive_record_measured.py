"""``deceptive_record`` measured as the other families are: detected, recovered and deceived apart, a gate on
``deceived`` and ``noticed``, a sensitivity curve, a worst case, shrinking (issue #44 items 1, 4, 5)."""

from __future__ import annotations

from functools import cache

from hypothesis import HealthCheck, find, settings

from sandbox import OracleAgent, StaticAgent
from sandbox.case import Case
from sandbox.domains import get_domain
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.degradation import Found, worst_case
from sandbox.evaluation.gate import check
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.runner import Runner
from sandbox.perturbations import create

FIND = settings(database=None, derandomize=True, max_examples=1000, suppress_health_check=list(HealthCheck))
MISFILE = [(create("deceptive_record", severity=s),) for s in (1, 2, 3)]


@cache
def tasks(n: int = 16) -> tuple:
    spec = create("deceptive_record", severity=1)
    every = get_domain("poi").tasks("test") + get_domain("medical").tasks("test")
    return tuple(t for t in every[:: len(every) // 120] if spec.applies_to(t))[:n]


def records(agent, stacks) -> list[Record]:
    runner, out = Runner(EpisodeCache(None)), []
    for stack in stacks:
        for task in tasks():
            case = Case(task, stack)
            episode, clean = runner.run(agent, case)
            out.append(Record.of("t", agent.name, case, episode, clean))
    return out


def test_detected_recovered_and_deceived_are_scored_apart() -> None:
    trusting, checking = records(StaticAgent(), MISFILE[:1]), records(OracleAgent(), MISFILE[:1])
    assert len(tasks()) >= 12 and all(r.noticed is not None for r in trusting + checking)  # each met a lie
    assert all(r.noticed and r.success for r in checking)  # detected (asked again) and recovered
    assert not any(r.noticed for r in trusting)  # went on...
    assert sum(r.outcome == "deceived" for r in trusting) >= 0.6 * len(trusting)  # ...and was deceived
    row = next(d for d in Report(trusting + checking).detection() if d.name == "deceptive_record")
    assert row.noticed.k == len(checking) and row.went_on.k == sum(not r.success for r in trusting) > 0


def test_the_gate_reads_deceived_by_its_interval() -> None:
    trusting, checking = Report(records(StaticAgent(), MISFILE)), Report(records(OracleAgent(), MISFILE))
    assert check(trusting, "interaction.deceived<=0.2").verdict == "FAIL"
    assert check(checking, "interaction.deceived<=0.2 interaction.noticed>=0.8").verdict == "PASS"


def test_the_sensitivity_curve_falls_with_severity_for_a_trusting_agent() -> None:
    report = Report(records(StaticAgent(), MISFILE))
    curve = [d for d in report.sensitivity() if d.perturbation == "deceptive_record"]
    assert [d.severity for d in curve] == [0, 1, 2, 3]
    assert curve[0].success.value == 1.0 and all(d.success.value <= 0.4 for d in curve[1:])


def test_the_worst_case_search_finds_and_keeps_a_misfiled_record() -> None:
    found = Found()
    for record in records(StaticAgent(), MISFILE):
        found.add(record)
    worst = worst_case(found, "interaction", StaticAgent(), Runner(EpisodeCache(None)), seed=0)
    assert worst is not None and "deceptive_record(s=1" in worst.case and "deceptive_record" in worst.shrunk


def test_strategies_shrink_a_misfiled_case_to_severity_one_on_a_short_task() -> None:
    from pytest_openagent import strategies

    spec = find(strategies.perturbations(names="deceptive_record"), lambda p: True, settings=FIND)
    assert (spec.severity, spec.seed) == (1, 0)
    case = find(strategies.cases(names="deceptive_record", max_stack=1), lambda c: True, settings=FIND)
    assert case.perturbations[0].severity == 1 and case.perturbations[0].applies_to(case.task)
    assert case.task.n_calls == 2  # the shortest plan a second source can witness: a lookup, then the record
