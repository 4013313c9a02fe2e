import collections

import pytest

import sandbox
from sandbox import OracleAgent, make_env, run_episodes


@pytest.mark.parametrize("domain", ["poi", "medical"])
def test_oracle_solves_every_solvable_test_task_and_refuses_every_unsolvable_one(domain):
    tasks = sandbox.tasks(domain, "test")
    episodes = run_episodes(OracleAgent(), [make_env(domain, t) for t in tasks])
    outcomes = collections.Counter((e.task.solvable, e.outcome) for e in episodes)
    assert set(outcomes) == {(True, "success"), (False, "refused")}, outcomes
    assert all(e.tool_errors == 0 for e in episodes)
