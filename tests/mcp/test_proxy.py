"""``openagent mcp-proxy``: the upstream's tools served perturbed over stdio and streamable HTTP, calls mapped
back to the upstream; a case file replays a recorded case; misuse exits 2 with what to fix."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import HERE, SERVER, proxy_process, write_tasks
from mcp import Client, StdioServerParameters

from pytest_openagent.cli import main
from sandbox.case import Case
from sandbox.perturbations import registry

UPSTREAM = f"stdio:{sys.executable} {SERVER}"


def _session(target, script):
    async def run():
        async with Client(target) as client:
            return await script(client)

    return asyncio.run(run())


async def _renamed_and_retried(client):
    names = sorted(t.name for t in (await client.list_tools()).tools)
    first = await client.call_tool("retrieveNote", {"note_id": "n1"})
    second = await client.call_tool("retrieveNote", {"note_id": "n1"})
    return names, client.instructions, first, second


def test_the_proxy_serves_renamed_tools_over_stdio_and_maps_calls_back(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    argv = ["-m", "pytest_openagent.cli", "mcp-proxy", "--upstream", UPSTREAM, "--tasks", str(tasks), "--task", "text",
            "--perturb", "semantic_renaming:2", "--perturb", "tool_name_noise:1,runtime_error"]  # fmt: skip
    names, instructions, first, second = _session(StdioServerParameters(command=sys.executable, args=argv),
                                                  _renamed_and_retried)  # fmt: skip
    assert names == ["catalogNotes", "insertNote", "retrieveNote", "scanNotes"]
    assert instructions == "What does the note n1 say?"
    assert first.is_error and json.loads(first.content[0].text)["error"] == "runtime_error"
    assert not second.is_error and json.loads(second.content[0].text)["text"] == "milk, eggs, rye bread"


def test_the_proxy_hosts_a_python_server_object_in_process_and_maps_calls_back(tmp_path):
    """``--upstream module:attribute`` runs the server inside the proxy over the SDK's in-memory transport: no
    second process, the same perturbations and the same mapping back as over stdio."""
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    argv = ["-m", "pytest_openagent.cli", "mcp-proxy", "--upstream", "notes_server:build", "--tasks", str(tasks),
            "--task", "text", "--perturb", "semantic_renaming:2,tool_name_noise:1,runtime_error"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    target = StdioServerParameters(command=sys.executable, args=argv, env=env)
    names, instructions, first, second = _session(target, _renamed_and_retried)
    assert names == ["catalogNotes", "insertNote", "retrieveNote", "scanNotes"]
    assert instructions == "What does the note n1 say?"
    assert first.is_error and json.loads(first.content[0].text)["error"] == "runtime_error"
    assert not second.is_error and json.loads(second.content[0].text)["text"] == "milk, eggs, rye bread"


async def _removed_tool(client):
    names = {t.name for t in (await client.list_tools()).tools}
    return names, await client.call_tool("get_note", {"note_id": "n1"})


def test_the_proxy_serves_a_recorded_case_over_http(tmp_path):
    from notes_domain import NOTES

    by_id = {t.id: t for t in NOTES.listed}
    case = Case(by_id["notes-text"], (registry.create("missing_capability"),))
    (tmp_path / "case.json").write_text(json.dumps(case.to_dict()))
    tasks = write_tasks(tmp_path / "t.jsonl")
    process, url = proxy_process("--case", str(tmp_path / "case.json"), "--tasks", str(tasks))
    try:
        names, result = _session(url, _removed_tool)
    finally:
        process.terminate()
        process.wait(10)
    assert "get_note" not in names and {"search_notes", "add_note"} <= names
    assert result.is_error and json.loads(result.content[0].text)["error"] == "unknown_tool"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--perturb", "semantic_renamin"],
            "Unknown perturbation 'semantic_renamin'. Did you mean 'semantic_renaming'",
        ),
        (["--perturb", "semantic_renaming:9"], "--perturb 'semantic_renaming:9': "),
        (["--perturb", "runtime_error:x"], "the severity after ':' is a whole number"),
        (["--perturb", "runtime_error"], "runtime_error does not change task mcp-serve"),
        (["--tasks", "TASKS"], "the tasks file has 5 tasks; pick the one to serve with --task ID"),
        (["--tasks", "TASKS", "--task", "txt"], "Unknown task 'txt'. Did you mean 'text'"),
        (["--upstream", "ftp://x"], "not a server address"),
    ],
)
def test_proxy_misuse_exits_2_with_what_to_fix(argv, message, tmp_path, capsys):
    tasks = str(write_tasks(tmp_path / "tasks.jsonl"))
    argv = [tasks if a == "TASKS" else a for a in argv]
    upstream = [] if "--upstream" in argv else ["--upstream", "notes_server:build"]
    with pytest.raises(SystemExit) as exit_info:
        main(["mcp-proxy", *upstream, *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
