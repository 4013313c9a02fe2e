"""``openagent diff-test`` end to end on the notes server: a snapshot recorded by ``mcp-proxy --snapshot``, a new
release written from it, the oracle's proof per task, an agent's verdicts, drift, and misuse."""

from __future__ import annotations

import copy
import json

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import stdio, write_tasks

from pytest_openagent.cli import main


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("snap") / "old.json"
    assert main(["mcp-proxy", "--upstream", stdio(), "--snapshot", str(path)]) == 0
    return json.loads(path.read_text())


def release(old: dict, *, drop_get: bool = False) -> dict:
    """Notes 2.0: get_note renamed fetch_note with noteId (camelCase), search_notes takes an optional limit,
    add_note a required folder of one value, list_notes removed, archive_note added; ``drop_get``: get_note removed
    with no successor."""
    tools = {t["name"]: t for t in copy.deepcopy(old["tools"])}
    get = tools.pop("get_note")
    if not drop_get:
        props = get["inputSchema"]["properties"]
        props["noteId"] = props.pop("note_id")
        tools["fetch_note"] = {
            **get,
            "name": "fetch_note",
            "inputSchema": {**get["inputSchema"], "required": ["noteId"]},
        }
    tools["search_notes"]["inputSchema"]["properties"]["limit"] = {"type": "integer", "default": 10}
    add = tools["add_note"]["inputSchema"]
    add["properties"]["folder"] = {"type": "string", "enum": ["inbox"], "description": "only inbox for now"}
    add["required"].append("folder")
    tools.pop("list_notes")
    schema = {"type": "object", "properties": {"note_id": {"type": "string"}}}
    tools["archive_note"] = {"name": "archive_note", "description": "Archive a note.", "inputSchema": schema}
    return {"tools": list(tools.values())}


def _run(tmp_path, old: dict, new: dict, *argv: str) -> tuple[int, dict]:
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "verdicts.json"
    code = main(["diff-test", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--mcp", stdio(), "--tasks",
                 str(tasks), "--no-cache", "--json", str(out), *argv])  # fmt: skip
    return code, json.loads(out.read_text())


def test_the_snapshot_is_the_servers_tools_list(old) -> None:
    names = [t["name"] for t in old["tools"]]
    assert names == ["search_notes", "get_note", "add_note", "list_notes"]  # the reset tool is the harness's
    assert all(t["inputSchema"]["type"] == "object" for t in old["tools"])


def test_the_oracle_proves_the_new_release_still_solves_every_task(tmp_path, old, mcp_configured, capsys) -> None:
    code, result = _run(tmp_path, old, release(old))
    assert code == 0, capsys.readouterr().out
    assert "get_note → fetch_note: note_id → noteId" in result["release"]
    assert {"search_notes: +limit", "add_note: +folder", "list_notes: removed", "archive_note: added"} <= set(
        result["release"]
    )
    verdicts = {v["task"]: v for v in result["verdicts"]}
    assert set(verdicts) == {"mcp-text", "mcp-title", "mcp-chain", "mcp-add"}  # 'share' makes no call
    assert all(v["broken"] is None and v["oracle"] == "success" for v in verdicts.values())


def test_a_release_that_removes_a_needed_tool_names_the_tasks_it_broke(tmp_path, old, mcp_configured, capsys) -> None:
    code, result = _run(tmp_path, old, release(old, drop_get=True), "--agent", "static")
    out = capsys.readouterr().out
    assert code == 1, out
    verdicts = {v["task"]: v for v in result["verdicts"]}
    broken = {t for t, v in verdicts.items() if v["broken"]}
    assert broken == {"mcp-text", "mcp-chain"}
    assert "get_note was removed" in verdicts["mcp-text"]["broken"] and "BROKEN" in out
    assert all(v["oracle"] == ("refused" if v["broken"] else "success") for v in verdicts.values())
    # the static agent replays the old calls: wrong where the release broke the task, right elsewhere
    assert {t for t, v in verdicts.items() if v["agent_right"]} == {"mcp-title", "mcp-add"}


def test_the_release_can_arrive_mid_episode(tmp_path, old, mcp_configured, capsys) -> None:
    code, result = _run(tmp_path, old, release(old), "--after", "1", "--agent", "static")
    verdicts = {v["task"]: v for v in result["verdicts"]}
    assert result["after"] == 1 and result["meta"]["spec"]["after"] == 1
    assert all(v["oracle"] == "success" for v in verdicts.values())
    # a one-call task ends before the release; the chain's second call meets the renamed tool
    assert verdicts["mcp-text"]["agent_right"] and not verdicts["mcp-chain"]["agent_right"]
    assert code == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"result": {"content": []}}', "not a tools/list result"),
        ('[{"name": "x"}]', "not a tools/list result"),
        ('{"tools": [{"description": "no name"}]}', "tools[0] is not a tool"),
        ("not json", "not JSON"),
    ],
)
def test_a_file_that_is_not_a_snapshot_exits_2_naming_the_fix(tmp_path, content, message, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        main(["diff-test", str(bad), str(bad), "--domain", "poi"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and "mcp-proxy --upstream SERVER --snapshot FILE" in err


def test_a_snapshot_of_no_known_world_exits_2(tmp_path, old, capsys) -> None:
    (tmp_path / "old.json").write_text(json.dumps(old))
    with pytest.raises(SystemExit) as exit_info:
        main(["diff-test", str(tmp_path / "old.json"), str(tmp_path / "old.json")])
    assert exit_info.value.code == 2
    assert "name the world with --domain NAME or --mcp SERVER" in capsys.readouterr().err
