"""A failure is blamed on a perturbation only when the clean twin succeeds (issue #35 item 5)."""

import pytest

import sandbox
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.report import Report
from sandbox.evaluation.runner import Runner
from sandbox.perturbations import create
from tests.toys import Fragile, Stubborn

pytestmark = pytest.mark.usefixtures("toy_perturbations")


def _task(n_calls: int):
    return next(t for t in sandbox.tasks("poi", "test") if t.solvable and t.n_calls == n_calls)


def _run(agent, case: Case, records: list):
    runner = Runner(EpisodeCache(None), records.append)
    with runner.installed():
        return case.run(agent)


def test_a_failure_the_clean_twin_shares_says_so_and_is_counted_apart():
    records: list = []
    shout = create("toy_shout", severity=3)
    shared = _run(Stubborn(), Case(_task(2), (shout,)), records)
    caused = _run(Fragile(), Case(_task(1), (shout,)), records)
    assert not shared.success and shared.fails_clean
    assert "clean twin: wrong_refusal too: the task fails with no perturbation" in shared.explain()
    assert not caused.success and not caused.fails_clean
    assert "clean twin: success (the same task with no perturbation): the perturbation caused this" in caused.explain()
    report = Report(records)
    row = report.row("all")
    assert (row.fails_clean.k, row.fails_clean.n) == (1, 2)
    assert report.to_dict()["rows"][-1]["fails_clean"]["k"] == 1
    assert "failures not caused by a perturbation: 1 of 2 perturbed failures" in report.table()


def test_a_clean_case_that_fails_says_it_fails_with_no_perturbation():
    episode = _run(Stubborn(), Case(_task(2)), [])
    assert episode.fails_clean
    assert "fails with no perturbation: the agent fails this task clean" in episode.explain()


def test_an_episode_run_without_its_twin_blames_nothing():
    episode = Case(_task(2), (create("toy_shout", severity=3),)).run(Stubborn())
    assert episode.clean_outcome is None and not episode.fails_clean
    assert "clean twin" not in episode.explain()
