"""The fixtures as a user meets them: ``agent``, ``make_case`` (and its deprecated alias ``sandbox``), ``case``."""

pytest_plugins = ["pytester"]

HAND_WRITTEN = """
import sandbox
import pytest_openagent as openagent

def test_a_hand_written_case_is_the_one_case_class_and_is_recorded(agent, make_case):
    case = make_case(family=sandbox.tasks("poi", "test")[0].family, perturbations=["toy_shout"])
    assert type(case) is sandbox.case.Case is openagent.Case
    assert case.perturbations[0].name == "toy_shout"
    episode, clean = case.run_with_clean(agent)
    assert episode.success and clean.success
    assert case.run(agent).model_dump() == episode.model_dump()  # served by the session's cache

def test_a_task_id_that_is_not_there_says_so(make_case):
    import pytest
    with pytest.raises(ValueError, match="no task 'nope' in the poi test split"):
        make_case("nope")
"""

OLD_NAME = """
def test_one(sandbox):
    assert sandbox().task.split == "test"

def test_two(sandbox):
    assert sandbox(index=1).task.split == "test"
"""


def test_make_case_builds_cases_that_the_session_caches_and_records(project):
    project.makepyfile(test_user=HAND_WRITTEN)
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["search: 2 episodes run, 2 from the cache", "search: 1 cases the property tests*"])


def test_the_old_sandbox_fixture_still_works_and_warns_once(project):
    project.makepyfile(test_user=OLD_NAME)
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*DeprecationWarning: the 'sandbox' fixture is now called 'make_case'*"])


def test_the_case_fixture_outside_perturb_points_to_make_case(project):
    project.makepyfile("def test_misuse(case): pass")
    result = project.runpytest()
    result.stdout.fnmatch_lines(["*drawn by @pytest_openagent.perturb*with the 'make_case' fixture*"])
