"""Options, header, marker, report, gates and pytest-xdist, as a user meets them."""

import html
import importlib.util
import json

import pytest

pytest_plugins = ["pytester"]

RECORDING_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names=["toy_shout", "toy_pad"], max_examples=25)
def test_record_only(agent, case):
    case.run(agent)

@openagent.perturb(names="toy_shout", max_examples=15)
def test_record_perception(agent, case):
    case.run(agent)

@openagent.perturb(names="toy_pad", max_examples=10)
def test_record_interaction(agent, case):
    case.run(agent)
"""


def test_header_names_agent_and_seed(project):
    project.makepyfile("def test_nothing(): pass")
    result = project.runpytest("--openagent-seed", "7")
    result.stdout.fnmatch_lines(["openagent: agent fixture=oracle, seed=7, cache=*"])


def test_the_summary_names_the_agents_whose_episodes_it_shows(project):
    project.makepyfile(
        test_own="""
        import pytest_openagent as openagent

        def mine(messages, tools):
            return "I cannot help with that."

        @openagent.perturb(names="toy_shout", max_examples=5)
        def test_mine(case):
            case.run(mine)
        """
    )
    result = project.runpytest()
    result.stdout.fnmatch_lines(["*= openagent: agent=[Ff]unction:test_own.mine@*, seed=0 =*"])
    result.stdout.no_fnmatch_line("*openagent: agent=oracle, seed=0 =*")
    result = project.runpytest("--openagent-n", "2", "--openagent-tiers", "perception")
    result.stdout.fnmatch_lines(
        [
            "*= openagent: agents=[Ff]unction:test_own.mine@*, oracle, seed=0 =*",
            "search: * cases the property tests explored, agent [Ff]unction:test_own.mine@*",
            "measurement: of agent oracle (--openagent-agent)",
        ]
    )


def test_options_come_from_ini_and_from_tool_openagent(project):
    project.makepyfile("def test_nothing(): pass")
    project.makepyprojecttoml('[tool.openagent]\nagent = "conftest:Fragile"\nseed = 11\n')
    project.runpytest().stdout.fnmatch_lines(["openagent: agent fixture=conftest:Fragile, seed=11, cache=*"])
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\nopenagent_seed = 12\n")
    project.runpytest().stdout.fnmatch_lines(["openagent: agent fixture=conftest:Fragile, seed=12, cache=*"])
    project.runpytest("--openagent-seed", "13").stdout.fnmatch_lines(["openagent: *seed=13*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--openagent-agent", "oracel"], "*--openagent-agent: Unknown agent 'oracel'. Did you mean 'oracle'?*"),
        (["--openagent-seed", "abc"], "*--openagent-seed: 'abc' is not a seed; give an integer >= 0 or 'random'*"),
        (["--openagent-gate", "perception.delta>=x"], "*--openagent-gate: 'perception.delta>=x': 'x' is not a number*"),
        (["--openagent-gate", "perception.sucess>=1"], "*Unknown metric 'sucess'. Did you mean 'success'?*"),
        (["--openagent-gate", "percepton.success>=1"], "*Unknown scope 'percepton'. Did you mean 'perception'?*"),
        (["--openagent-max-regression", "lots"], "*--openagent-max-regression: the margin must be a number of points*"),
        (["--openagent-max-regression", "nan"], "*--openagent-max-regression: the margin must be a number of points*"),
        (["--openagent-max-regression", "-1"], "*from 0 to 100*"),
        (["--openagent-gate", "clean.success==1"], "*an interval cannot show equality*"),
        (["--openagent-n", "0"], "*--openagent-n: '0': give at least 1 case per tier*"),
        (["--openagent-max-steps", "0"], "*--openagent-max-steps: '0': give at least 1 turn*"),
        (["--openagent-names", "toy_shuot"], "*--openagent-names: Unknown perturbation 'toy_shuot'*"),
        (["--openagent-inconclusive", "maybe"], "*Unknown policy 'maybe'*"),
        (["--openagent-baseline", "missing.json"], "*--openagent-baseline: cannot read report*missing.json*"),
        (["--openagent-sequential"], "*--openagent-sequential: a sequential gate stops criteria at their thresholds*"),
        (["--openagent-price", "gpt-4o=2.5/10"], "*--openagent-price: the price table names 'gpt-4o', not the model*"),
        (["--openagent-price", "oracle=1/-2"], "*--openagent-price: price of 'oracle': '-2' is not a price*"),
    ],
)
def test_a_bad_option_is_a_usage_error_that_says_what_was_given(project, args, message):
    project.makepyfile("def test_nothing(): pass")
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_the_step_budget_comes_from_the_options_and_tool_openagent(project):
    project.makepyfile("def test_nothing(): pass")
    project.makepyprojecttoml("[tool.openagent]\nmax_steps = 1\n")
    measure = ["--openagent-names", "toy_pad", "--openagent-n", "2", "--openagent-report", "r.json"]
    project.runpytest(*measure).assert_outcomes(passed=1)
    meta = json.loads((project.path / "r.json").read_text())
    assert meta["meta"]["max_steps"] == 1  # the oracle answers in its second turn: one is not enough
    assert {r["clean_outcome"] for r in meta["records"]} == {"step_limit"}
    project.runpytest(*measure, "--openagent-max-steps", "8").assert_outcomes(passed=1)
    meta = json.loads((project.path / "r.json").read_text())
    assert meta["meta"]["max_steps"] == 8 and {r["clean_outcome"] for r in meta["records"]} == {"success"}


def test_a_bad_key_in_tool_openagent_is_a_usage_error(project):
    project.makepyfile("def test_nothing(): pass")
    project.makepyprojecttoml('[tool.openagent]\nagnet = "oracle"\n')
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.openagent[]]: Unknown key 'agnet'. Did you mean 'agent'?*"])


def test_the_marker_is_registered_and_selects(project):
    project.makepyfile(test_rec=RECORDING_TEST, test_plain="def test_plain(): pass")
    result = project.runpytest("--strict-markers", "-m", "openagent")
    result.assert_outcomes(passed=3)
    project.runpytest("--strict-markers", "-m", "not openagent").assert_outcomes(passed=1)


def test_p_no_openagent_disables_everything(project):
    project.makepyfile("def test_nothing(): pass")
    result = project.runpytest("-p", "no:openagent")
    result.assert_outcomes(passed=1)
    assert "openagent:" not in result.stdout.str()
    assert project.runpytest("-p", "no:openagent", "--openagent-seed", "1").ret == pytest.ExitCode.USAGE_ERROR


MEASURE = ["--openagent-names", "toy_shout,toy_pad", "--openagent-n", "30"]
"""The fixed measurement over the toy perturbations, 30 cases per tier."""


def test_the_search_and_the_measurement_are_shown_apart_and_the_json_holds_both(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    result = project.runpytest(
        "--openagent-agent", "conftest:Fragile", "--openagent-report", "out/report.json", *MEASURE
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*= openagent: agent=conftest:Fragile, seed=0 =*",
            "search: * cases the property tests explored (not gated: Hypothesis chose them)",
            "scope * episodes * clean * perturbed * Δ points [[]95% CI[]] * tool errors * refusal * refused solvable *"
            " repeated writes",
            "measurement: 30 cases per tier and their clean twins, seed 0, domain poi (what gates read); *",
            "clean *",
            "perception * 30 *",
            "  toy_shout *",
            "interaction * 30 * 100.0% * 100.0% * +0.0 *",
            "  toy_pad *",
            "all * 60 *",
        ]
    )
    data = json.loads((project.path / "out" / "report.json").read_text())
    assert data["schema"] == "pytest-openagent/report" and data["schema_version"] == 4
    assert data["meta"]["agent"] == "conftest:Fragile" and data["meta"]["seed"] == 0
    assert data["meta"]["kind"] == "measurement" and data["meta"]["n"] == 30
    assert {r["test"] for r in data["records"]} == {"evaluate"}
    assert {r["test"] for r in data["search"]["records"]} == {f"test_rec.py::{name}" for name in
                                                               ("test_record_only", "test_record_perception",
                                                                "test_record_interaction")}  # fmt: skip
    scopes = [row["scope"] for row in data["rows"]]
    assert scopes == ["clean", "perception", "toy_shout", "interaction", "toy_pad", "all"]
    perception = data["rows"][1]
    assert perception["clean"]["value"] == 1.0 and perception["success"]["value"] < 1.0
    assert perception["delta"]["points"] < 0 and perception["delta"]["low"] < perception["delta"]["points"]
    assert data["rows"][0]["wrong_refusal"]["n"] > 0


FAILING_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names="toy_shout", max_examples=40)
def test_survives_shouting(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""


def test_a_failing_test_file_run_twice_gives_the_same_gate_figures_and_n(project):
    project.makepyfile(test_fail=FAILING_TEST)
    args = ["--openagent-agent", "conftest:Fragile", *MEASURE, "--openagent-gate", "perception.delta>=-10"]
    runs = []
    for name in ("one", "two"):
        result = project.runpytest(*args, "--openagent-report", f"{name}.json")
        result.assert_outcomes(failed=1)
        runs.append(json.loads((project.path / f"{name}.json").read_text()))
    one, two = runs
    assert one["rows"] == two["rows"] and one["meta"]["n"] == two["meta"]["n"] == 30
    assert one["records"] == two["records"]
    assert one["meta"]["episodes_run"] > 0 and two["meta"]["episodes_run"] == 0
    assert two["meta"]["episodes_cached"] == one["meta"]["episodes_run"] + one["meta"]["episodes_cached"]
    assert two["search"]["meta"]["episodes_cached"] > 0
    # The search did differ: the second run replayed the saved failure first and stopped early.
    assert len(two["search"]["records"]) <= len(one["search"]["records"])


def test_the_html_page_holds_the_shrunk_failure_with_its_trajectory_and_the_figures(project):
    # Not importorskip: pytester takes out of sys.modules what the test imported, and numpy cannot load twice.
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("the figures need matplotlib (the plot extra)")
    project.makepyfile(test_fail=FAILING_TEST, test_rec=RECORDING_TEST)
    args = ["--openagent-agent", "conftest:Fragile", *MEASURE, "--openagent-gate", "perception.delta>=-10"]
    # In a subprocess, for the same reason: the run imports matplotlib, and so numpy.
    result = project.runpytest_subprocess(*args, "--openagent-html", "out/r.html", "--openagent-plot",
                                          "out/curves.png", "--openagent-report", "out/r.json")  # fmt: skip
    result.assert_outcomes(failed=1, passed=3)
    result.stdout.fnmatch_lines(
        [
            "measurement: success against severity (s=0: the same tasks clean)",
            "toy_shout * perception * 100% (*",
            "HTML report written to *r.html",
            "sensitivity figure written to *curves.png",
        ]
    )
    data = json.loads((project.path / "out" / "r.json").read_text())
    [failure] = data["failures"]
    assert failure["record"]["test"] == "test_fail.py::test_survives_shouting"
    # Hypothesis shrank it to the minimal failure: one shout of severity 2 (toys.py)
    assert [(p["name"], p["severity"]) for p in failure["record"]["stack"]] == [("toy_shout", 2)]
    assert failure["explanation"].startswith(f"outcome: {failure['record']['outcome']} (case: ")
    text = (project.path / "out" / "r.html").read_text()
    assert "test_fail.py::test_survives_shouting" in text and "toy_shout(s=2" in text
    assert html.escape(failure["explanation"].splitlines()[1], quote=True) in text
    assert 'id="search"' in text and 'data-verdict="FAIL"' in text and text.count("data:image/png;base64,") == 2
    assert (project.path / "out" / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_a_gate_that_should_fail_fails_and_says_what_was_measured(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    gate = "clean.success>=0.8 perception.delta>=-10 interaction.success>=0.8"
    result = project.runpytest("--openagent-agent", "conftest:Fragile", "--openagent-gate", gate, *MEASURE)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "openagent gate FAIL (3 checks)",
            "  PASS * clean.success>=0.8: measured 1.000 [[]0.9*, 1.000[]] (n=*)",
            "  FAIL * perception.delta>=-10: measured -* points [[]-*, -*[]] (n=30)",
            "  PASS * interaction.success>=0.8: measured 1.000 *",
        ]
    )


def test_a_gate_that_should_pass_passes(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    gate = '["clean.success>=0.8", "perception.delta>=-20"]'
    project.makepyprojecttoml(f'[tool.openagent]\ngate = {gate}\nnames = "toy_shout,toy_pad"\nn = 30\n')
    result = project.runpytest("--openagent-agent", "oracle")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["openagent gate PASS (2 checks)", "  PASS * clean.success>=0.8: *"])


def test_an_inconclusive_gate_fails_unless_the_policy_says_pass(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    args = ["--openagent-gate", "clean.success>=0.99", "--openagent-names", "toy_shout", "--openagent-n", "5"]
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["openagent gate INCONCLUSIVE (1 checks)", "  INCONCLUSIVE clean.success>=0.99: *",
                                 "  inconclusive counts as fail (--openagent-inconclusive)*"])  # fmt: skip
    assert project.runpytest(*args, "--openagent-inconclusive", "pass").ret == pytest.ExitCode.OK


def test_a_baseline_regression_is_caught_on_the_same_cases(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    assert project.runpytest("--openagent-report", "base.json", *MEASURE).ret == pytest.ExitCode.OK
    # 30 cases per tier cannot show a loss under 5 points is ruled out; 15 they can.
    same = project.runpytest("--openagent-baseline", "base.json", "--openagent-max-regression", "15", *MEASURE)
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["  PASS * baseline perception: success 100.0% vs baseline 100.0% on the same 30 cases*"])
    worse = project.runpytest("--openagent-agent", "conftest:Fragile", "--openagent-baseline", "base.json", *MEASURE)
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    worse.stdout.fnmatch_lines(
        ["  FAIL * baseline perception: success *% vs baseline 100.0% on the same 30 cases: -* (at most -5 allowed)"]
    )
    undecided = project.runpytest("--openagent-baseline", "base.json", *MEASURE)
    undecided.stdout.fnmatch_lines(["  INCONCLUSIVE baseline perception: * +0.0 [[]-11.*, +11.*[]] points *"])


def test_a_baseline_that_covers_more_fails_naming_what_differs(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    assert project.runpytest("--openagent-report", "base.json", *MEASURE).ret == pytest.ExitCode.OK
    narrower = project.runpytest(
        "--openagent-baseline", "base.json", "--openagent-names", "toy_shout", "--openagent-n", "10",
        "--openagent-seed", "3",
    )  # fmt: skip
    assert narrower.ret == pytest.ExitCode.TESTS_FAILED
    out = narrower.stdout.str()
    assert "the reports cover different cases" in out
    assert "seed: 3 here, 0 in the baseline" in out and "n: 10 here, 30 in the baseline" in out
    assert "names: ['toy_shout'] here, ['toy_shout', 'toy_pad'] in the baseline" in out
    assert "tiers: interaction, perception" in out


def test_junit_gets_properties_and_the_gate_as_a_test_case(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    gate = ["--openagent-gate", "perception.delta>=-20", *MEASURE]
    project.runpytest("--junitxml", "junit.xml", *gate).assert_outcomes(passed=3)
    xml = (project.path / "junit.xml").read_text()
    assert 'name="openagent.perception.success" value="1.0000"' in xml
    assert 'name="openagent_episodes"' in xml
    assert 'name="openagent.cost.total.episodes_run"' in xml and 'name="openagent.cost.wall_s"' in xml
    assert 'classname="openagent" name="gate"' in xml and "<failure" not in xml
    project.runpytest("--junitxml", "junit.xml", "--openagent-agent", "conftest:Fragile", *gate)
    xml = (project.path / "junit.xml").read_text()
    assert 'classname="openagent" name="gate"' in xml and "perception.delta&gt;=-20" in xml and "<failure" in xml


DEAD_AGENT = """
class Dead:
    def fingerprint(self):
        return "dead-v1"

    def act(self, turns):
        raise ConnectionRefusedError("[Errno 111] Connection refused")
"""


def test_a_dead_agent_stops_the_session_naming_the_cause(project):
    project.makepyfile(deadagent=DEAD_AGENT, test_rec=RECORDING_TEST)
    result = project.runpytest("--openagent-agent", "deadagent:Dead", *MEASURE, "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*openagent: the agent failed on * episodes*ConnectionRefusedError: [[]Errno 111[]]*"])
    assert "cases per tier and their clean twins" not in result.stdout.str()


def test_the_report_holds_the_same_figures_serially_and_with_two_workers(project):
    # Both runs in fresh processes: Hypothesis mixes constants from the loaded local modules into its
    # draws, so a run inside this test process (which loaded other tests) would draw other examples.
    project.makepyfile(test_rec=RECORDING_TEST, test_fail=FAILING_TEST)
    agent = ["--openagent-agent", "conftest:Fragile"]
    serial = project.runpytest_subprocess(*agent, "--openagent-report", "serial.json", "--openagent-cache-dir", "c1")
    serial.assert_outcomes(passed=3, failed=1)
    parallel = project.runpytest_subprocess(
        *agent, "-n", "2", "--openagent-report", "parallel.json", "--openagent-cache-dir", "c2"
    )
    parallel.assert_outcomes(passed=3, failed=1)
    one, two = (json.loads((project.path / f"{name}.json").read_text()) for name in ("serial", "parallel"))
    assert one["rows"] == two["rows"]
    assert one["records"] == two["records"]
    assert one["failures"] == two["failures"] and len(one["failures"]) == 1  # a worker's failure reaches the report
    assert len(one["records"]) > 20


def test_a_dead_agent_found_by_the_measurement_fails_the_session(project):
    project.makepyfile(deadagent=DEAD_AGENT, test_plain="def test_plain(): pass")
    result = project.runpytest("--openagent-agent", "deadagent:Dead", "--openagent-gate", "default", *MEASURE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["openagent: no measurement: the agent failed on 120 of 120 episodes*"])


def test_an_unusable_cache_folder_is_a_usage_error_before_any_test_runs(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    project.path.joinpath("taken").write_text("a file, not a folder")
    result = project.runpytest("--openagent-cache-dir", "taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openagent-cache-dir: the cache folder *taken cannot be used: *taken is a file, "
                                 "not a folder*--openagent-no-cache*"])  # fmt: skip
    project.makepyfile(test_rec="def test_plain(): pass")  # no test of ours: the cache folder is not asked for
    project.runpytest("--openagent-cache-dir", "taken").assert_outcomes(passed=1)


def test_a_sequential_gate_stops_early_and_its_report_says_where(project):
    project.makepyfile("def test_nothing(): pass")
    project.makepyprojecttoml('[tool.openagent]\nagent = "oracle"\nsequential = true\nprices = {oracle = [1, 2]}\n')
    args = ["--openagent-names", "toy_shout,toy_pad", "--openagent-n", "40", "--openagent-report", "r.json"]
    result = project.runpytest(*args, "--openagent-gate", "clean.success>=0.5 all.delta>=-50")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "sequential gate: * of the sample's 80 cases run*",
            "measurement: what it cost",
            "cost * money",
            "openagent gate PASS*",
        ]
    )
    sequential = json.loads((project.path / "r.json").read_text())["meta"]["sequential"]
    assert sequential["cases_run"] < 80
    assert {c["verdict"] for c in sequential["stopped"].values()} == {"PASS"}


def test_a_session_prints_noticed_apart_from_recovered_and_gates_deceived(project):
    project.makepyfile(
        test_trusting="""
        import pytest_openagent as openagent

        @openagent.perturb(names="deceptive_result", max_examples=3)
        def test_trusting(agent, case):
            case.run(agent)
        """
    )
    args = ["--openagent-agent", "static", "--openagent-names", "deceptive_result", "--openagent-n", "20",
            "--openagent-gate", "interaction.deceived<=0.05", "--openagent-report", "r.json"]  # fmt: skip
    result = project.runpytest(*args)
    result.stdout.fnmatch_lines(
        ["measurement: noticed apart from recovered (cases that met a fault)", "*deceptive_result*0.0% (0/*"]
    )
    result.stdout.fnmatch_lines(["*FAIL*interaction.deceived<=0.05: measured*"])
    report = json.loads((project.path / "r.json").read_text())
    assert report["detection"][0]["name"] == "interaction" and report["detection"][0]["noticed"]["k"] == 0
