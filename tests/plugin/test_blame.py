"""A perturb test's failure shrinks to the clean case where the agent fails with no perturbation too (issue #35)."""

pytest_plugins = ["pytester"]

USER_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names=["toy_shout", "toy_pad"], max_examples=30)
def test_agent(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""


def test_a_failure_the_agent_shows_clean_shrinks_to_the_clean_case(project):
    project.makepyfile(test_user=USER_TEST)
    result = project.runpytest("--openagent-agent", "conftest:Stubborn")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*fails with no perturbation: the agent fails this task clean*",
            "*case=Case(poi-test-* [[]*, 2 calls] | clean)*",
        ]
    )


def test_a_failure_the_perturbation_causes_keeps_it_and_says_the_clean_twin_succeeds(project):
    project.makepyfile(test_user=USER_TEST)
    result = project.runpytest("--openagent-agent", "conftest:Fragile")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*clean twin: success*caused this*", "*case=Case(poi-test-* | toy_shout(s=2*"])


def test_cases_that_may_be_clean_shrink_to_the_clean_case_and_are_mostly_perturbed(toy_perturbations):
    from hypothesis import HealthCheck, find, given, settings

    from pytest_openagent import strategies

    strategy = strategies.cases(names=["toy_shout", "toy_pad"], min_stack=0)
    found = find(strategy, lambda c: True, settings=settings(database=None, suppress_health_check=list(HealthCheck)))
    assert found.perturbations == ()
    drawn = []

    @settings(max_examples=200, database=None, deadline=None)
    @given(strategy)
    def draw(case):
        drawn.append(case)

    draw()
    clean = sum(not c.perturbations for c in drawn)
    assert 0 < clean < len(drawn) / 8


def test_min_stack_is_0_or_1():
    import pytest

    from pytest_openagent import strategies

    with pytest.raises(ValueError, match="min_stack must be 0"):
        strategies.cases(min_stack=2)
