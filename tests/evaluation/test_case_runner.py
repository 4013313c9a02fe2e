"""One ``Case``: ``run`` goes through the installed runner (cached, recorded) and runs directly otherwise."""

import pytest

import pytest_openagent as openagent
import sandbox
from sandbox.agents import OracleAgent
from sandbox.case import Case, current_runner, install_runner
from sandbox.evaluation import EpisodeCache, Runner
from sandbox.perturbations import create


class Counting(OracleAgent):
    def __init__(self):
        self.turns = 0

    def fingerprint(self):
        return "counting-v1"

    def act(self, turns):
        self.turns += len(turns)
        return super().act(turns)


def _case() -> Case:
    task = next(t for t in sandbox.tasks("poi", "test") if t.n_calls >= 1 and t.solvable)
    return Case(task, (create("toy_shout"),))


def test_the_plugin_exports_the_sandbox_case():
    assert openagent.Case is Case


@pytest.mark.usefixtures("toy_perturbations")
def test_without_a_runner_a_case_runs_directly_every_time():
    agent, case = Counting(), _case()
    assert current_runner() is None
    first = case.run(agent)
    turns = agent.turns
    episode, clean = case.run_with_clean(agent)
    assert agent.turns > 2 * turns > 0  # ran again, the twin too: no cache in between
    assert first.outcome == episode.outcome == clean.outcome == "success"
    solo, same = case.clean().run_with_clean(agent)
    assert solo is same


@pytest.mark.usefixtures("toy_perturbations")
def test_an_installed_runner_serves_every_run_and_records_it_and_is_put_back(tmp_path):
    agent, case, records = Counting(), _case(), []
    runner = Runner(EpisodeCache(tmp_path), records.append)
    with runner.installed() as installed:
        assert current_runner() is installed is runner
        episode = case.run(agent)
        turns = agent.turns
        again, clean = case.run_with_clean(agent)
    assert current_runner() is None
    assert agent.turns == turns and again.model_dump() == episode.model_dump() and clean.success
    assert [r.case for r in records] == [case.key(), case.key()]


def test_install_runner_returns_the_one_it_replaces():
    runner = Runner(EpisodeCache(None))
    assert install_runner(runner) is None
    assert install_runner(None) is runner
