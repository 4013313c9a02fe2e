"""The worst case: its degradation score, its report section and the gate that reads it (issue #35 item 3)."""

import pytest

import sandbox
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.degradation import Found, degradation, worst_case
from sandbox.evaluation.gate import GateError, check, parse_gate
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.runner import Runner
from sandbox.perturbations import create
from tests.toys import Strained, Stubborn

pytestmark = pytest.mark.usefixtures("toy_perturbations")


def _task(n_calls: int):
    return next(t for t in sandbox.tasks("poi", "test") if t.solvable and t.n_calls == n_calls)


def _record(agent, case: Case) -> Record:
    episode, clean = Runner(EpisodeCache(None)).run(agent, case)
    return Record.of("t", "a", case, episode, clean)


def _stack(shout: int, hum: int):
    return tuple(create(name, severity=s) for name, s in (("toy_shout", shout), ("toy_hum", hum)) if s)


def test_degradation_ranks_a_caused_failure_above_struggle_above_nothing():
    task = _task(1)
    nothing = degradation(_record(Strained(), Case(task, (create("toy_space", severity=3),))))
    some = degradation(_record(Strained(), Case(task, _stack(1, 6))))
    more = degradation(_record(Strained(), Case(task, _stack(3, 26))))
    broken = degradation(_record(Strained(), Case(task, _stack(3, 27))))
    louder = degradation(_record(Strained(), Case(task, _stack(3, 30))))
    assert nothing == 0 < some < more < 1 < 2 < louder < broken  # of two failures, the milder stack scores higher


def test_a_failure_the_clean_twin_shares_scores_nothing_for_failing():
    shared = _record(Stubborn(), Case(_task(2), (create("toy_space", severity=1),)))
    assert not shared.success and not shared.clean_success
    assert degradation(shared) < 1


def test_the_worst_case_keeps_its_shrunk_failure_and_its_neighbourhood():
    task = _task(1)
    found = Found()
    for stack in (_stack(1, 6), _stack(3, 30), _stack(3, 27)):  # the last failure is the shrunk one
        found.add(_record(Strained(), Case(task, stack)))
    worst = worst_case(found, "perception", Strained(), Runner(EpisodeCache(None)), seed=0)
    assert worst.shrunk.endswith("toy_shout(s=3,eval) + toy_hum(s=27,eval)")
    assert worst.case.endswith("toy_shout(s=3,eval) + toy_hum(s=27,eval)")  # the highest degradation
    assert worst.examples == 3 and worst.episodes == 4  # three cases and one clean twin
    around = worst.neighbourhood
    assert around.n >= 1 and around.k == 0 and worst.failure_bound > 0
    assert task.id not in worst.neighbours
    assert all(t.startswith("poi-test-" + task.family) for t in worst.neighbours)
    report = Report([], worst=[worst])
    again = Report.from_dict(report.to_dict())
    assert again.worst == [worst]
    assert "failure rate at least" in report.table()


def test_the_gate_reads_the_worst_case_of_a_tier():
    task = _task(1)
    found = Found()
    found.add(_record(Strained(), Case(task, _stack(3, 27))))
    worst = worst_case(found, "perception", Strained(), Runner(EpisodeCache(None)))
    report = Report([], worst=[worst])
    assert check(report, "worst.perception.success<=0.5").verdict == "PASS"
    assert check(report, "worst.perception.success>=0.5").verdict == "FAIL"
    missing = check(report, "worst.reasoning.success>=0.5")
    assert missing.verdict == "FAIL" and "--openagent-search worst" in missing.checks[0].detail
    with pytest.raises(GateError, match="Did you mean 'perception'"):
        parse_gate("worst.percepton.success>=0.5")
    with pytest.raises(GateError, match="gated on success or episodes, not 'delta'"):
        parse_gate("worst.perception.delta>=-10")
