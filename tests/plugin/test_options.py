"""Every option checked before any test runs: a bad value is one line and exit 4, never a traceback later."""

import pytest

from training import agent_kind

pytest_plugins = ["pytester"]

AGENT_MODULE = "class Agent:\n    def act(self, turns):\n        return ['I cannot help.' for _ in turns]\n"


def _usage_error(result: pytest.RunResult, message: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "passed" not in result.stdout.str()  # no test ran


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("my_agent:nope", "--openagent-agent: agent 'my_agent:nope': module 'my_agent' has no attribute 'nope'"),
        ("no_such_module:Agent", "--openagent-agent: agent 'no_such_module:Agent': cannot import module *"),
    ],
)
def test_an_agent_that_cannot_be_found_is_a_usage_error_before_any_test(project, spec, message):
    project.makepyfile(my_agent=AGENT_MODULE, test_plain="def test_plain(agent): pass")
    _usage_error(project.runpytest("--openagent-agent", spec), message)
    assert project.runpytest("--openagent-agent", "my_agent:Agent").ret == 0


def test_a_model_agent_without_the_train_extra_names_the_install_line(project, monkeypatch):
    monkeypatch.setattr(agent_kind, "TRAIN_MODULES", ("openagent_absent_torch",))
    project.makepyfile("def test_plain(): pass")
    _usage_error(
        project.runpytest("--openagent-agent", "hf:runs/sft"),
        "--openagent-agent: agent 'hf:runs/sft' needs the `train` extra (openagent_absent_torch not installed); "
        "install it: pip install 'pytest-openagent[[]train[]]' (from a checkout: pip install -e '.[[]train[]]')",
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("seed = true", "*[[]tool.openagent[]] seed: True is not a seed; give an integer >= 0 or 'random'"),
        ("n = 2.9", "*[[]tool.openagent[]] n: 2.9 is not a whole number of cases per tier (e.g. 50)"),
        ("gate = 5", "*[[]tool.openagent[]] gate: 5 is not text; give criteria such as *"),
        ("max-regression = true", "*[[]tool.openagent[]] max-regression: the margin must be a number*"),
        ('tiers = ","', "*[[]tool.openagent[]] tiers: no tier given*"),
    ],
)
def test_a_value_of_the_wrong_kind_in_tool_openagent_is_a_usage_error(project, toml, message):
    project.makepyfile("def test_plain(): pass")
    project.makepyprojecttoml(f"[tool.openagent]\n{toml}\n")
    _usage_error(project.runpytest(), message)


def test_a_report_path_that_cannot_be_written_is_refused_before_the_run(project):
    project.makepyfile("def test_plain(): pass")
    project.mkdir("reports")
    _usage_error(project.runpytest("--openagent-report", "reports"), "--openagent-report: '*reports' is a folder; *")
    project.makepyfile(blocker="")
    _usage_error(
        project.runpytest("--openagent-report", "blocker.py/r.json"),
        "--openagent-report: cannot write the report to '*blocker.py/r.json': *is a file, not a folder",
    )
    _usage_error(
        project.runpytest("--openagent-html", "reports"),
        "--openagent-html: '*reports' is a folder; give the file to write the HTML report to, *",
    )
    _usage_error(
        project.runpytest("--openagent-plot", "reports"),
        "--openagent-plot: '*reports' is a folder; give the file to write the figure to, *",
    )
