"""The must-holds, as a user meets them: a failing perturb test shrinks to a minimal case and replays."""

import json
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

USER_TEST = """
import json, os
import pytest_openagent as openagent

FIRST = []

@openagent.perturb(tier="perception", names="toy_shout", max_examples=40)
def test_agent_reads_a_shouted_query(agent, case):
    if not FIRST:
        FIRST.append(case)
        with open("first_case.json", "w") as f:
            json.dump(case.to_dict(), f)
    episode = case.run(agent)
    if not episode.success:
        with open("last_failure.json", "w") as f:
            json.dump(case.to_dict(), f)
    assert episode.success, episode.explain()
"""


def _case(path: Path):
    """A case a pytester run wrote; the run's end unregistered the toys, so register them again
    (the ``toy_perturbations`` fixture removes them after the test)."""
    from pytest_openagent import Case
    from tests import toys

    toys.register_toys()
    return Case.from_dict(json.loads(path.read_text()))


def test_a_failure_shrinks_to_one_perturbation_at_its_lowest_biting_severity_on_a_one_call_task(
    project, toy_perturbations
):
    project.makepyfile(test_user=USER_TEST)
    result = project.runpytest("--openagent-agent", "conftest:Fragile")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*case=Case(poi-test-* [[]*, 1 calls] | toy_shout(s=2,eval*)*"])
    failing = _case(project.path / "last_failure.json")
    assert len(failing.perturbations) == 1 and failing.task.n_calls == 1
    assert failing.perturbations[0].severity == 2  # severity 1 does not bite the fragile agent


def test_the_same_file_passes_against_the_oracle(project):
    project.makepyfile(test_user=USER_TEST)
    project.runpytest("--openagent-agent", "oracle").assert_outcomes(passed=1)


def test_the_second_run_replays_the_failure_first_and_reruns_no_cached_episode(project, monkeypatch, toy_perturbations):
    project.makepyfile(test_user=USER_TEST)
    counter = project.path / "calls.txt"
    monkeypatch.setenv("TOY_COUNT", str(counter))
    project.runpytest("--openagent-agent", "conftest:Fragile").assert_outcomes(failed=1)
    calls = counter.read_text()
    shrunk = _case(project.path / "last_failure.json")
    assert calls, "the agent was never called"

    second = project.runpytest("--openagent-agent", "conftest:Fragile")
    second.assert_outcomes(failed=1)
    assert counter.read_text() == calls, "the second run called the agent again"
    assert _case(project.path / "first_case.json") == shrunk, "the stored failure was not replayed first"


def test_the_database_is_kept_when_ci_is_set(project, monkeypatch, toy_perturbations):
    monkeypatch.setenv("CI", "true")
    project.makepyfile(test_user=USER_TEST)
    project.runpytest("--openagent-agent", "conftest:Fragile").assert_outcomes(failed=1)
    shrunk = _case(project.path / "last_failure.json")
    project.runpytest("--openagent-agent", "conftest:Fragile").assert_outcomes(failed=1)
    assert _case(project.path / "first_case.json") == shrunk
    assert any((project.path / ".openagent_cache" / "hypothesis").iterdir())


def test_invariant_relation_skips_tasks_failed_clean_and_checks_the_twin(project):
    project.makepyfile(
        test_inv="""
        import pytest_openagent as openagent

        @openagent.perturb(names=["toy_shout", "toy_pad"], relation="invariant", max_examples=30)
        def test_twin(case):
            assert case.perturbations
        """
    )
    result = project.runpytest("--openagent-agent", "conftest:Fragile")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invariant broken: the agent solves poi-test-* clean but not under toy_shout(s=2*"])
    project.runpytest("--openagent-agent", "oracle").assert_outcomes(passed=1)


def test_invariant_relation_checks_the_agent_the_test_runs_not_the_fixture(project):
    project.makepyfile(
        test_inv="""
        import pytest_openagent as openagent
        from sandbox.evaluation.specs import load_agent

        FRAGILE = load_agent("conftest:Fragile")

        @openagent.perturb(names=["toy_shout", "toy_pad"], relation="invariant", max_examples=30)
        def test_fragile(case):
            case.run(FRAGILE)

        @openagent.perturb(names=["toy_shout", "toy_pad"], relation="invariant", max_examples=30)
        def test_fragile_asserting(agent, case):
            assert case.run(FRAGILE).success
        """
    )
    result = project.runpytest("--openagent-agent", "oracle")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*invariant broken: the agent solves poi-test-* clean but not under toy_shout(s=2*"
                                 "(agent fragile-v1)*"])  # fmt: skip
    project.runpytest("--openagent-agent", "conftest:Fragile", "-k", "not asserting").assert_outcomes(failed=1)


def test_invariant_relation_leaves_out_cases_an_agent_of_the_body_fails_clean(project):
    project.makepyfile(
        test_inv="""
        import pytest_openagent as openagent
        from sandbox.agent import Reply
        from sandbox.agents import OracleAgent

        class NoOneCallTask(OracleAgent):
            def fingerprint(self):
                return "no-one-call-task-v1"

            def reply(self, turn):
                if self.task_for(turn.episode_id).n_calls == 1:
                    return Reply(text="no idea")
                return super().reply(turn)

        AGENT = NoOneCallTask()

        @openagent.perturb(names=["toy_pad"], relation="invariant", max_examples=20)
        def test_clean_failures_are_out_of_scope(case):
            assert case.run(AGENT).success, "a task the agent fails clean is not the relation's"
        """
    )
    project.runpytest("--openagent-agent", "oracle").assert_outcomes(passed=1)


def _episodes_run(project) -> list[dict]:
    """The episodes the session ran (not read back), as the episode cache stored them on disk."""
    packs = (project.path / ".openagent_cache" / "episodes").rglob("pack-*.jsonl")
    return [json.loads(line.split("\t", 1)[1]) for pack in packs for line in pack.read_text().splitlines()]


BUDGETED = """
import pytest_openagent as openagent

@openagent.perturb(tier="perception", names="toy_shout", max_examples=40, max_episodes={budget})
def test_agent_reads_a_shouted_query(agent, case):
    assert case.run(agent).success
"""


def test_an_episode_budget_bounds_search_and_shrinking_and_keeps_the_failure(project, toy_perturbations):
    project.makepyfile(test_user=BUDGETED.format(budget=None))
    project.runpytest("--openagent-agent", "conftest:Fragile").assert_outcomes(failed=1)
    unbounded = len(_episodes_run(project))
    shutil.rmtree(project.path / ".openagent_cache")

    project.makepyfile(test_user=BUDGETED.format(budget=8))
    result = project.runpytest("--openagent-agent", "conftest:Fragile")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*case=Case(poi-test-* | toy_shout(s=*", "search: *spent its episode budget*"])
    assert len(_episodes_run(project)) <= 8 < unbounded
    # The next run replays the failure from the cache and the database: the budget is spent on new episodes only.
    project.runpytest("--openagent-agent", "conftest:Fragile").assert_outcomes(failed=1)


def test_a_budget_spent_still_replays_a_failure_the_cache_does_not_keep(project, toy_perturbations):
    # An agent_error episode is never cached, so Hypothesis' replay of the failure runs it again past the budget.
    project.makepyfile(
        test_user="""
        import pytest_openagent as openagent
        from sandbox.agents import OracleAgent

        class Erring(OracleAgent):
            def fingerprint(self):
                return "erring-v1"

            def reply(self, turn):
                if "!!" in turn.messages[1]["content"]:
                    raise RuntimeError("the shouting broke me")
                return super().reply(turn)

        AGENT = Erring()

        @openagent.perturb(tier="perception", names="toy_shout", max_examples=40, max_episodes=5)
        def test_agent_reads_a_shouted_query(case):
            assert case.run(AGENT).success
        """
    )
    result = project.runpytest("--openagent-agent", "oracle")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Episode(agent_error, poi-test-*shout*"])
    assert "Flaky" not in result.stdout.str() and "Unreliable" not in result.stdout.str()


def test_a_budget_spent_before_any_case_met_the_invariant_skips_the_test(project):
    project.makepyfile(
        test_inv="""
        import pytest_openagent as openagent
        from sandbox import tasks

        TWO_CALLS = [t.id for t in tasks("poi", "test", 40) if t.n_calls == 2]

        @openagent.perturb(names=["toy_pad"], tasks=TWO_CALLS, relation="invariant", max_examples=5, max_episodes=4)
        def test_twin(case):
            pass
        """
    )
    result = project.runpytest("--openagent-agent", "conftest:Stubborn", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*episode budget (max_episodes) was spent after 4 new episodes before any case met*"])


def test_an_episode_budget_must_be_a_positive_int(toy_perturbations):
    import pytest_openagent as openagent

    with pytest.raises(ValueError, match="max_episodes must be a positive int or None"):
        openagent.perturb(tier="perception", max_episodes=0)


def test_an_invariant_never_runs_a_perturbed_case_of_a_task_known_failed_clean(project):
    project.makepyfile(
        test_inv="""
        import pytest_openagent as openagent
        from sandbox import tasks

        ONE_CALL = next(t.id for t in tasks("poi", "test", 40) if t.n_calls == 1)
        TWO_CALLS = next(t.id for t in tasks("poi", "test", 40) if t.n_calls == 2)

        @openagent.perturb(names=["toy_pad"], tasks=[ONE_CALL, TWO_CALLS], relation="invariant", max_examples=15)
        def test_twin(case):
            pass
        """
    )
    project.runpytest("--openagent-agent", "conftest:Stubborn").assert_outcomes(passed=1)
    run = _episodes_run(project)
    clean = [e for e in run if e["perturbation"] == e["task"]["id"]]  # a clean episode is labelled by its task
    failed_clean = {e["task"]["id"] for e in clean if e["outcome"] != "success"}
    assert failed_clean, "the agent was meant to fail its two-call task clean"
    perturbed = [e for e in run if e not in clean and e["task"]["id"] in failed_clean]
    assert len(perturbed) <= len(failed_clean)  # only beside the twin's first run, in its batch


def test_events_name_each_perturbation_for_hypothesis_statistics(project):
    project.makepyfile(test_user=USER_TEST)
    result = project.runpytest("--openagent-agent", "oracle", "--hypothesis-show-statistics")
    result.stdout.fnmatch_lines(["*perturbation: toy_shout*"])


def test_a_test_without_case_is_a_clear_error(toy_perturbations):
    import pytest_openagent as openagent

    with pytest.raises(TypeError, match="must take a 'case' argument"):
        openagent.perturb(tier="perception")(lambda agent: None)


def test_bad_arguments_say_what_is_allowed(toy_perturbations):
    import pytest_openagent as openagent

    with pytest.raises(ValueError, match="Unknown tier 'perceptoin'"):
        openagent.perturb(tier="perceptoin")
    with pytest.raises(ValueError, match="Did you mean 'toy_shout'"):
        openagent.perturb(names=["toy_shuot"])
    with pytest.raises(ValueError, match="relation='metamorphic' is not known"):
        openagent.perturb(tier=1, relation="metamorphic")


REAL_TEST = """
import json
import pytest_openagent as openagent

@openagent.perturb(tier="perception", max_examples=60)
def test_agent_reads_perturbed_perception(agent, case):
    episode = case.run(agent)
    if not episode.success:
        with open("last_failure.json", "w") as f:
            json.dump(case.to_dict(), f)
    assert episode.success, episode.explain()
"""


def test_with_the_real_catalogue_the_static_baseline_fails_minimally_and_the_oracle_passes(pytester):
    static = pytest.importorskip("sandbox.agents.static", reason="the static baseline has not landed")
    from sandbox.perturbations import names

    if not names("perception"):
        pytest.skip("no perception perturbation registered")
    from pytest_openagent import Case

    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_user=REAL_TEST)
    result = pytester.runpytest("--openagent-agent", "static")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*case=Case(poi-test-* [[]*, 1 calls] | *(s=*)*"])
    failing = Case.from_dict(json.loads((pytester.path / "last_failure.json").read_text()))
    assert len(failing.perturbations) == 1 and failing.task.n_calls == 1
    p = failing.perturbations[0]
    if p.severity > max(p.min_severity, 1):
        milder = Case(failing.task, (p.model_copy(update={"severity": p.severity - 1}),))
        assert milder.run(static.StaticAgent()).success, "a milder severity also bites: not the lowest"
    pytester.runpytest("--openagent-agent", "oracle").assert_outcomes(passed=1)


def test_a_failing_property_tests_traceback_starts_in_the_test_not_the_plugin(pytester):
    pytester.makepyfile(test_x="""
        import pytest_openagent as openagent

        def mine(messages, tools):
            return "I cannot help with that."

        @openagent.perturb(names="query_noise", max_examples=3)
        def test_mine(case):
            assert case.run(mine).success
    """)  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--openagent-no-cache")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "decorator.py" not in out and "session.py" not in out, out
    result.stdout.fnmatch_lines(["*_ test_mine _*", "", "case = Case(*", "", "*@openagent.perturb(*"])
    full = pytester.runpytest("-p", "no:cacheprovider", "--openagent-no-cache", "--fulltrace").stdout.str()
    assert "decorator.py" in full, "--fulltrace still shows the wrapper"
