"""``--openagent-search worst``: Hypothesis' target() finds a failure that needs a specific stack at high severity,
where the default search, with the same budget and seed, does not (issue #35 item 3; rates over seeds:
benchmarks/bench_worst.py)."""

import json

import pytest

from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.runner import Runner

pytest_plugins = ["pytester"]

USER_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names=["toy_shout", "toy_hum", "toy_space"], max_stack=2, max_examples=60)
def test_agent(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""
SEED = "8"
"""A seed where the targeted search finds the failure and the default one does not, for both relations (seeds
2-11 with the stack drawn perturbation by perturbation: the default misses on 9 of 10, the targeted search finds
on 8 of 10; the benchmark prints such rates)."""


def _run(project, *args):
    # in a process of its own: what other tests left registered in this one must not change its draws
    return project.runpytest_subprocess("--openagent-agent", "conftest:Strained", "--openagent-seed", SEED, *args)


def test_the_default_search_misses_the_stack_that_breaks_the_agent(project):
    project.makepyfile(test_user=USER_TEST)
    _run(project).assert_outcomes(passed=1)


def test_the_worst_case_search_climbs_to_it_shrinks_it_and_reports_it(project):
    project.makepyfile(test_user=USER_TEST)
    report = project.path / "report.json"
    result = _run(
        project, "--openagent-search", "worst", "--openagent-report", str(report), "--openagent-n", "2",
        "--openagent-names", "toy_shout", "--openagent-gate", "worst.perception.success>=0.5",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*clean twin: success*caused this*", "*case=Case(poi-test-* | toy_*(s=*) + toy_*(s=*))*",
         "worst case found per tier*", "  perception: *toy_shout(s=3,eval)*", "*failure rate at least*",
         "*FAIL*worst.perception.success>=0.5*"]
    )  # fmt: skip
    data = json.loads(report.read_text())
    [worst] = data["worst"]
    shrunk = {p["name"]: p["severity"] for p in worst["shrunk_stack"]}
    assert shrunk["toy_shout"] == 3 and shrunk["toy_hum"] >= 27
    assert worst["neighbourhood"]["n"] >= 1 and worst["neighbourhood"]["k"] == 0
    assert worst["search"] == "test_user.py::test_agent" and worst["seed"] == int(SEED)


def test_a_misspelt_search_is_a_usage_error(project):
    project.makepyfile(test_user=USER_TEST)
    result = _run(project, "--openagent-search", "wrost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openagent-search*Did you mean 'worst'*"])


def test_search_tier_is_reproducible_and_beats_the_default_on_one_seed(toy_perturbations):
    from pytest_openagent.search import WORST_STACK, search_tier
    from sandbox.evaluation.sample import Sample
    from tests.toys import Strained

    names = ["toy_shout", "toy_hum", "toy_space"]

    def search(targeted):
        sample = Sample(seed=3, names=names, max_stack=WORST_STACK)
        return search_tier(Strained(), "perception", 40, Runner(EpisodeCache(None)), sample, targeted=targeted)

    found = search(True)
    assert found.failure is not None and "toy_shout(s=3" in found.failure.label
    assert [r.case for r in search(True).records] == [r.case for r in found.records]
    assert search(False).failure is None


def test_openagent_eval_worst_reports_and_gates_the_worst_case_per_tier(tmp_path, capsys, toy_perturbations):
    from pytest_openagent.cli import main

    out = tmp_path / "report.json"
    argv = ["eval", "--agent", "tests.toys:Strained", "--names", "toy_shout,toy_hum,toy_space", "--n", "4",
            "--seed", "3", "--worst", "40", "--cache-dir", str(tmp_path / "cache"), "--json", str(out)]  # fmt: skip
    assert main([*argv, "--gate", "worst.perception.success<=0.5"]) == 0
    printed = capsys.readouterr().out
    assert "worst case found per tier" in printed and "fixed sample's mean success" in printed
    [worst] = json.loads(out.read_text())["worst"]
    assert worst["tier"] == "perception" and "toy_shout(s=3,eval)" in worst["shrunk"]
    assert worst["search"] == "openagent eval --worst" and worst["examples"] >= 40
    assert main([*argv, "--gate", "worst.perception.success>=0.5"]) == 1


def test_an_invariant_test_climbs_too(project):
    project.makepyfile(test_user=USER_TEST.replace("max_examples=60)", 'max_examples=60, relation="invariant")'))
    _run(project).assert_outcomes(passed=1)
    result = _run(project, "--openagent-search", "worst", "--openagent-cache-dir", "other")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the perturbation caused this*"])
    assert "toy_shout(s=3,eval)" in result.stdout.str()


OWN_AGENT_TEST = """
import pytest_openagent as openagent


def mine(messages, tools):
    return "I cannot help with that."


@openagent.perturb(names="toy_shout", max_examples=5)
def test_mine(case):
    assert case.run(mine).success
"""


def _strict(text):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_test_running_its_own_agent_reports_its_worst_case_truthfully(project):
    project.makepyfile(test_own=OWN_AGENT_TEST)
    report, page = project.path / "report.json", project.path / "page.html"
    result = project.runpytest(
        "--openagent-search", "worst", "--openagent-report", str(report), "--openagent-n", "2",
        "--openagent-names", "toy_shout", "--openagent-html", str(page),
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    [worst] = _strict(report.read_text())["worst"]  # no NaN, which JSON parsers other than Python's reject
    assert worst["neighbourhood"] == {"k": 0, "n": 0, "low": None, "high": None}
    assert "another agent than the session's" in worst["not_rerun"]
    assert "not re-run" in out and "no other" not in out, out
    assert "fixed sample's mean success" not in out, "the oracle's mean is not beside another agent's worst case"
    html = page.read_text()
    assert "Worst case per tier" in html and 'data-scope="worst.perception"' in html
    result.stdout.fnmatch_lines(["openagent: agent fixture=oracle*", "*openagent: agent*test_own.mine*"])
