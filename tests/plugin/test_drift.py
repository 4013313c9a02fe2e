"""Drift as a user meets it: ``--openagent-drift`` (or ``drift=True``) draws onsets, and the failure of an agent that
keeps the first tool list shrinks to one perturbation with its onset at the first turn."""

import json

from hypothesis import given, settings

from pytest_openagent.strategies import cases
from tests.toys import FirstTools

pytest_plugins = ["pytester"]

USER_TEST = """
import json
import pytest_openagent as openagent

@openagent.perturb(tier=["perception", "interaction"], max_examples=60{drift})
def test_agent_follows_a_changing_tool_list(agent, case):
    episode = case.run(agent)
    if not episode.success:
        with open("last_failure.json", "w") as f:
            json.dump(case.to_dict(), f)
    assert episode.success, episode.explain()
"""


def _shrunk(project):
    from pytest_openagent import Case

    return Case.from_dict(json.loads((project.path / "last_failure.json").read_text()))


def test_a_client_that_keeps_the_first_tool_list_fails_under_drift_and_shrinks_to_one_onset(project):
    project.makepyfile(test_user=USER_TEST.format(drift=""))
    project.runpytest("--openagent-agent", "conftest:FirstTools").assert_outcomes(passed=1)
    result = project.runpytest("--openagent-agent", "conftest:FirstTools", "--openagent-drift")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*case=Case(poi-test-* | *(s=*,after=1)*"])
    shrunk = _shrunk(project)
    assert len(shrunk.perturbations) == 1 and shrunk.perturbations[0].after == 1
    assert shrunk.static().run(FirstTools()).success, "the same change at turn 0 is met"


def test_drift_true_in_the_decorator_draws_drift_cases_without_the_option(project):
    project.makepyfile(test_user=USER_TEST.format(drift=", drift=True"))
    project.runpytest("--openagent-agent", "conftest:FirstTools").assert_outcomes(failed=1)
    assert _shrunk(project).perturbations[0].after == 1


@settings(max_examples=40, database=None)
@given(case=cases(tier=["perception", "interaction"], drift=True))
def test_drift_cases_have_an_onset_within_the_plan_of_perturbations_that_can_drift(case):
    assert case.perturbations
    for p in case.perturbations:
        assert p.can_drift() and 1 <= p.after <= max(1, len(case.task.waves()) - 1)
