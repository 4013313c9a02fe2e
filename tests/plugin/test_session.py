"""Options, header, marker, report, gates and pytest-xdist, as a user meets them."""

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
    result.stdout.fnmatch_lines(["openagent: agent=oracle, seed=7, cache=*"])


def test_options_come_from_ini_and_from_tool_openagent(project):
    project.makepyfile("def test_nothing(): pass")
    project.makepyprojecttoml('[tool.openagent]\nagent = "conftest:Fragile"\nseed = 11\n')
    project.runpytest().stdout.fnmatch_lines(["openagent: agent=conftest:Fragile, seed=11, cache=*"])
    project.makeini("[pytest]\naddopts = -p no:cacheprovider\nopenagent_seed = 12\n")
    project.runpytest().stdout.fnmatch_lines(["openagent: agent=conftest:Fragile, seed=12, cache=*"])
    project.runpytest("--openagent-seed", "13").stdout.fnmatch_lines(["openagent: *seed=13*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--openagent-agent", "oracel"], "*--openagent-agent: Unknown agent 'oracel'. Did you mean 'oracle'?*"),
        (["--openagent-seed", "abc"], "*--openagent-seed: 'abc' is not a seed; give an integer >= 0 or 'random'*"),
        (["--openagent-gate", "perception.delta>=x"], "*--openagent-gate: 'perception.delta>=x': 'x' is not a number*"),
        (["--openagent-gate", "perception.sucess>=1"], "*Unknown metric 'sucess'. Did you mean 'success'?*"),
        (["--openagent-gate", "percepton.success>=1"], "*Unknown scope 'percepton'. Did you mean 'perception'?*"),
        (["--openagent-max-regression", "lots"], "*--openagent-max-regression: 'lots' is not a number of points*"),
        (["--openagent-baseline", "missing.json"], "*--openagent-baseline: cannot read report*missing.json*"),
    ],
)
def test_a_bad_option_is_a_usage_error_that_says_what_was_given(project, args, message):
    project.makepyfile("def test_nothing(): pass")
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


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


def test_the_table_and_the_json_report(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    result = project.runpytest("--openagent-agent", "conftest:Fragile", "--openagent-report", "out/report.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*= openagent: * episodes, agent=conftest:Fragile, seed=0 =*",
            "scope * episodes * clean * perturbed * Δ points [[]95% CI[]] * tool errors * refusal",
            "clean *",
            "perception *",
            "  toy_shout *",
            "interaction * 100.0% * 100.0% * +0.0 *",
            "  toy_pad *",
            "all *",
        ]
    )
    data = json.loads((project.path / "out" / "report.json").read_text())
    assert data["schema"] == "pytest-openagent/report" and data["schema_version"] == 1
    assert data["meta"]["agent"] == "conftest:Fragile" and data["meta"]["seed"] == 0
    scopes = [row["scope"] for row in data["rows"]]
    assert scopes == ["clean", "perception", "toy_shout", "interaction", "toy_pad", "all"]
    perception = data["rows"][1]
    assert perception["clean"]["value"] == 1.0 and perception["success"]["value"] < 1.0
    assert perception["delta"]["points"] < 0 and perception["delta"]["low"] < perception["delta"]["points"]


def test_a_gate_that_should_fail_fails_and_says_what_was_measured(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    gate = "clean.success>=0.95 perception.delta>=-10 interaction.success>=0.9"
    result = project.runpytest("--openagent-agent", "conftest:Fragile", "--openagent-gate", gate)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["openagent gate failed:", "  perception.delta>=-10: measured -* points (n=*)"])
    assert "clean.success" not in result.stdout.str().split("openagent gate failed:")[1]


def test_a_gate_that_should_pass_passes(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    project.makepyprojecttoml('[tool.openagent]\ngate = ["clean.success>=0.95", "perception.delta>=-10"]\n')
    result = project.runpytest("--openagent-agent", "oracle")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["openagent gate passed: clean.success>=0.95 perception.delta>=-10"])


def test_a_baseline_regression_is_caught(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    assert project.runpytest("--openagent-report", "base.json").ret == pytest.ExitCode.OK
    same = project.runpytest("--openagent-baseline", "base.json", "--openagent-max-regression", "5")
    assert same.ret == pytest.ExitCode.OK
    worse = project.runpytest("--openagent-agent", "conftest:Fragile", "--openagent-baseline", "base.json")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    worse.stdout.fnmatch_lines(["  perception: success *% vs baseline 100.0% (-*.* points; at most -5 allowed)"])


def test_junit_gets_properties(project):
    project.makepyfile(test_rec=RECORDING_TEST)
    project.runpytest("--junitxml", "junit.xml").assert_outcomes(passed=3)
    xml = (project.path / "junit.xml").read_text()
    assert 'name="openagent.perception.success" value="1.0000"' in xml
    assert 'name="openagent_episodes"' in xml


def test_the_report_holds_the_same_figures_serially_and_with_two_workers(project):
    # Both runs in fresh processes: Hypothesis mixes constants from the loaded local modules into its
    # draws, so a run inside this test process (which loaded other tests) would draw other examples.
    project.makepyfile(test_rec=RECORDING_TEST)
    agent = ["--openagent-agent", "conftest:Fragile"]
    serial = project.runpytest_subprocess(*agent, "--openagent-report", "serial.json", "--openagent-cache-dir", "c1")
    serial.assert_outcomes(passed=3)
    parallel = project.runpytest_subprocess(
        *agent, "-n", "2", "--openagent-report", "parallel.json", "--openagent-cache-dir", "c2"
    )
    parallel.assert_outcomes(passed=3)
    one, two = (json.loads((project.path / f"{name}.json").read_text()) for name in ("serial", "parallel"))
    assert one["rows"] == two["rows"]
    assert one["records"] == two["records"]
    assert len(one["records"]) > 20
