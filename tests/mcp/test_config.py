"""Naming an MCP server: --openagent-mcp and [tool.openagent] mcp in pytest, openagent eval --mcp --tasks."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import SERVER, stdio, write_tasks

from pytest_openagent.cli import main
from tests import toys

pytest_plugins = ["pytester"]


def test_openagent_eval_measures_an_mcp_server_from_a_tasks_file(tmp_path, mcp_configured, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    report = tmp_path / "report.json"
    names = "semantic_renaming,tool_name_noise"
    code = main(["eval", "--agent", "oracle", "--mcp", stdio(), "--tasks", str(tasks), "--tiers", "perception",
                 "--names", names, "--n", "4", "--no-cache", "--json", str(report)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    meta = json.loads(report.read_text())["meta"]
    assert (meta["domain"], meta["mcp"]) == ("mcp", stdio())
    records = json.loads(report.read_text())["records"]
    assert len(records) == 4 and all(r["success"] for r in records), out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "t.jsonl"], "--tasks gives the tasks of an MCP server: add --mcp SERVER"),
        (["--mcp", "ftp://nowhere"], "not a server address; write it as 'stdio:python -m my_server'"),
        (["--mcp", stdio(), "--tasks", "missing.jsonl"], "MCP tasks file 'missing.jsonl' does not exist"),
        (["--mcp", "stdio:/no/such/server"], "cannot start MCP server stdio:/no/such/server"),
    ],
)
def test_openagent_eval_misuse_exits_2_with_what_to_fix(argv, message, mcp_configured, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--agent", "oracle", "--n", "1", "--no-cache", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    write_tasks(pytester.path / "tasks.jsonl")
    pytester.makepyfile(test_notes="""
        import pytest_openagent as openagent

        @openagent.perturb(names="toy_shout", domain="mcp", max_examples=5)
        def test_robust(agent, case):
            assert case.task.domain == "mcp"
            episode = case.run(agent)
            assert episode.success, episode.explain()
    """)  # fmt: skip
    return pytester


def test_the_plugin_takes_the_server_from_the_command_line(pytester, mcp_configured):
    project = _project(pytester)
    result = project.runpytest(f"--openagent-mcp={stdio()}", "--openagent-mcp-tasks=tasks.jsonl",
                               "--openagent-n=2", "--openagent-names=toy_shout")  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*measurement: 2 cases per tier*domain mcp*"])


def test_the_plugin_takes_the_server_from_pyproject(pytester, mcp_configured):
    project = _project(pytester)
    project.makepyprojecttoml(f'[tool.openagent]\nmcp = "stdio:{sys.executable} {SERVER}"\nmcp-tasks = "tasks.jsonl"\n')
    project.runpytest().assert_outcomes(passed=1)


def test_a_bad_server_address_in_pytest_is_a_usage_error(pytester, mcp_configured):
    project = _project(pytester)
    result = project.runpytest("--openagent-mcp=stdio:")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openagent-mcp: MCP server 'stdio:': 'stdio:' needs a command*"])
