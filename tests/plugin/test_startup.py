"""What the installed plugin costs a run that does not use it (nothing heavy loaded), and ``pytest --help``."""

import subprocess
import sys

import pytest

import pytest_openagent
from pytest_openagent import options

pytest_plugins = ["pytester"]

LOADED = """
import sys

def pytest_terminal_summary(terminalreporter):
    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("sandbox", "training", "pytest_openagent"))
    terminalreporter.write_line(f"loaded: {ours}")
"""


def test_a_run_without_robustness_tests_loads_no_sandbox(pytester):
    pytester.makeconftest(LOADED)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0
    loaded = "loaded: ['pytest_openagent', 'pytest_openagent.options', 'pytest_openagent.plugin']"
    result.stdout.fnmatch_lines(["openagent: agent fixture=oracle, seed=0, cache=*", loaded])


def test_an_openagent_fixture_or_option_starts_the_session(pytester):
    pytester.makeconftest(LOADED)
    pytester.makepyfile("def test_uses_the_agent(agent):\n    assert agent is not None\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["loaded: *'pytest_openagent.session'*'sandbox'*"])
    pytester.makepyfile("def test_uses_the_agent():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--openagent-seed", "3")
    result.stdout.fnmatch_lines(
        ["openagent: agent fixture=oracle, seed=3, cache=*", "loaded: *'pytest_openagent.session'*"]
    )


def test_importing_the_package_loads_its_names_on_first_use():
    code = (
        "import sys, pytest_openagent as o; print('sandbox' in sys.modules, 'hypothesis' in sys.modules); "
        "o.perturb; o.Report; print('sandbox' in sys.modules, 'hypothesis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True", "True"]
    assert set(pytest_openagent.__all__) <= set(dir(pytest_openagent))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pytest_openagent.nope  # noqa: B018


def test_the_plugins_copies_of_sandbox_constants_agree():
    from sandbox.evaluation.cache import DEFAULT_CACHE_DIR
    from sandbox.evaluation.specs import SPEC_HELP

    assert options.DEFAULT_CACHE_DIR == DEFAULT_CACHE_DIR
    assert options.SPEC_HELP == SPEC_HELP


def test_pytest_help_lists_the_options(pytester):
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*--openagent-gate=GATE*", "*(verdicts from 95% intervals)*", "*openagent_gate (string):*"]
    )


ROBUSTNESS_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names="toy_shout", max_examples=5)
def test_shout(agent, case):
    assert case.run(agent).success
"""


def test_workers_records_reach_a_controller_that_had_no_reason_to_start(project):
    # No option given: the xdist controller collects nothing, and starts its session when a worker reports.
    project.makepyfile(test_rec=ROBUSTNESS_TEST, test_plain="def test_plain(): pass")
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["search: * episodes run, * from the cache", "search: * cases the property tests *"])
