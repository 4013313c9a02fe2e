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
        (["--tasks", "t.jsonl"], "--tasks is about an MCP server: add --mcp SERVER"),
        (["--mcp", "ftp://nowhere"], "not a server address; write it as 'stdio:python -m my_server'"),
        (["--mcp", stdio(), "--tasks", "missing.jsonl"], "MCP tasks file 'missing.jsonl' does not exist"),
        (["--mcp", "stdio:/no/such/server"], "cannot start MCP server stdio:/no/such/server"),
        (["--mcp", stdio(), "--mcp-inspect", "tool:nope"], "inspect='tool:nope', but it has no tool 'nope'"),
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


def _header(path, settings):
    tasks = write_tasks(path)
    tasks.write_text(json.dumps({"openagent": settings}) + "\n" + tasks.read_text())
    return tasks


def test_openagent_eval_takes_reset_inspect_and_roles_from_flags(tmp_path, mcp_configured, capsys):
    from sandbox.domains import DOMAINS

    tasks = write_tasks(tmp_path / "tasks.jsonl")
    code = main(["eval", "--agent", "oracle", "--mcp", "notes_server:build", "--tasks", str(tasks),
                 "--mcp-reset", "tool:reset", "--mcp-inspect", "tool:list_notes", "--mcp-roles", "get_note=lookup",
                 "--names", "tool_name_noise", "--tiers", "perception", "--n", "2", "--no-cache"])  # fmt: skip
    assert code == 0, capsys.readouterr().out
    link = DOMAINS["mcp"].link
    assert (link.reset, link.inspect) == ("tool:reset", "tool:list_notes")
    assert {t.name: (t.role, t.role_known) for t in DOMAINS["mcp"].tools}["get_note"] == ("lookup", True)


def test_a_tasks_files_header_gives_the_settings_and_the_step_budget(tmp_path, mcp_configured, capsys):
    from sandbox.domains import DOMAINS

    tasks = _header(tmp_path / "tasks.jsonl", {"reset": "tool:reset", "inspect": "tool:list_notes", "max_steps": 7})
    report = tmp_path / "report.json"
    names = ["--names", "tool_name_noise", "--tiers", "perception"]
    code = main(["eval", "--agent", "oracle", "--mcp", "notes_server:build", "--tasks", str(tasks), "--n", "2",
                 *names, "--no-cache", "--json", str(report)])  # fmt: skip
    assert code == 0, capsys.readouterr().out
    assert json.loads(report.read_text())["meta"]["max_steps"] == 7
    assert DOMAINS["mcp"].link.inspect == "tool:list_notes"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mcp-reset", "none"], "--mcp-reset is about an MCP server: add --mcp SERVER"),
        (["--mcp", "notes_server:build", "--mcp-reset", "wipe"], "--mcp-reset: reset 'wipe': give 'auto', 'restart'"),
        (["--mcp", "notes_server:build", "--mcp-roles", "add_note=writer"], "Did you mean 'write'?"),
        (["--mcp", "notes_server:build", "--mcp-inspect", "list_notes"], "--mcp-inspect: inspect 'list_notes': give"),
        (["--mcp", "notes_server:broken", "--tasks", "TASKS"], "does not bring the server back to its first state"),
        (["--mcp", "notes_server:build", "--tasks", "HEADER"], "Unknown setting 'rest'. Did you mean 'reset'?"),
    ],
)
def test_mcp_settings_misuse_exits_2_with_what_to_fix(argv, message, tmp_path, mcp_configured, capsys):
    files = {
        "TASKS": str(write_tasks(tmp_path / "tasks.jsonl")),
        "HEADER": str(_header(tmp_path / "h.jsonl", {"rest": 1})),
    }
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--agent", "oracle", "--n", "1", "--no-cache", *[files.get(a, a) for a in argv]])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_plugin_takes_the_settings_from_pyproject(pytester, mcp_configured):
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    write_tasks(pytester.path / "tasks.jsonl")
    pytester.makepyprojecttoml('[tool.openagent]\nmcp = "notes_server:build"\nmcp-tasks = "tasks.jsonl"\n'
                               'mcp-reset = "tool:reset"\nmcp-inspect = "tool:list_notes"\n'
                               'mcp-roles = {get_note = "lookup"}\n')  # fmt: skip
    pytester.makepyfile(test_settings="""
        from sandbox.domains import get_domain

        def test_the_domain_is_run_as_the_settings_say():
            domain = get_domain("mcp")
            assert (domain.link.reset, domain.link.inspect) == ("tool:reset", "tool:list_notes")
            assert {t.name: t.role_known for t in domain.tools}["get_note"]
    """)  # fmt: skip
    pytester.runpytest().assert_outcomes(passed=1)
    result = pytester.runpytest("--openagent-mcp-roles=get_note=reader")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openagent-mcp-roles: roles: tool 'get_note': Unknown role 'reader'*"])


def test_openagent_check_domain_proves_an_mcp_server_with_its_tasks(tmp_path, mcp_configured, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "matrix.json"
    code = main(["check-domain", "notes_server:build", "--tasks", str(tasks), "--mcp-reset", "tool:reset",
                 "--names", "tool_name_noise,fatal_error", "--no-cache", "--json", str(out)])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    data = json.loads(out.read_text())
    assert data["domain"] == "mcp" and data["oracle_clean"] == data["tasks"] == 5 and not data["failures"]
    assert {(c["perturbation"], c["severity"]) for c in data["cells"]} == {
        ("tool_name_noise", 1), ("tool_name_noise", 2), ("tool_name_noise", 3), ("fatal_error", 1)}  # fmt: skip
    assert "fatal_error (s=1: 1 of 5 tasks): the task makes no tool call" in text
