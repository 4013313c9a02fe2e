"""τ² airline and retail (examples/tau2, docs/worlds/tau2.md): worlds nobody here wrote, through their PyPI MCP
servers (state in files, a ``reset_state`` tool, a ``state_key`` argument hidden). The tasks files are τ²'s own
tasks as ``tau2_world.py`` writes them; (slow) the reset verifies, the oracle is right on every applied case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[2] / "examples" / "tau2"


@pytest.fixture
def tau2_world(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # the tasks' inspect hook
    import tau2_world

    return tau2_world


@pytest.mark.parametrize("world", ["airline", "retail"])
def test_the_tasks_files_say_how_the_server_is_run(world, tau2_world):
    rows = [json.loads(line) for line in (HERE / f"{world}.jsonl").read_text().splitlines()]
    assert rows[0] == tau2_world.header(world)
    assert rows[0]["openagent"]["reset"] == "tool:reset_state" and "*.state_key" in rows[0]["openagent"]["hide"]
    assert all(r["plan"] and r["id"].startswith(f"{world}-") for r in rows[1:])


@pytest.mark.slow  # replays every task's actions on a fresh copy of the package's database
@pytest.mark.parametrize("world", ["airline", "retail"])
def test_the_tasks_files_are_what_the_packages_data_gives(world, tau2_world):
    pytest.importorskip(f"tau2_{world}_mcp", reason="needs the worlds extra: pip install 'pytest-openagent[worlds]'")
    rows = [json.loads(line) for line in (HERE / f"{world}.jsonl").read_text().splitlines()]
    assert rows[0] == tau2_world.header(world)
    assert rows[1:] == tau2_world.tasks(world)
    assert all(r["plan"] for r in rows[1:]) and {r["family"] for r in rows[1:]} >= {"lookup"}


@pytest.mark.slow
@pytest.mark.parametrize(("world", "task"), [("airline", "airline-19"), ("retail", "retail-17")])
def test_check_domain_on_one_task(world, task, tau2_world, tmp_path):
    pytest.importorskip(f"tau2_{world}_mcp", reason="needs the worlds extra: pip install 'pytest-openagent[worlds]'")
    import sandbox
    from sandbox.audits.check_domain import check_domain
    from sandbox.domains import DOMAINS
    from sandbox.domains.mcp import mcp_domain

    rows = [r for r in tau2_world.tasks(world) if r["id"] == task]
    assert rows, f"{task} is no task of the {world} file"
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [tau2_world.header(world), *rows]) + "\n")
    # the server keeps its state in files: a folder of this test's own, so that no other run shares them
    state = f"TAU2_{world.upper()}_MCP_STATE_DIR={tmp_path / 'state'}"
    domain = mcp_domain(f"stdio:env {state} {sys.executable} -m tau2_{world}_mcp.server", path, name=f"tau2-{world}")
    sandbox.register_domain(domain, replace=True)
    try:
        tools = {t.name: t for t in domain.tools}
        assert "get_call_log" not in tools and "reset_state" not in tools
        assert not any("state_key" in t.schema["properties"] for t in tools.values())
        names = ["tool_name_noise", "missing_values", "runtime_error", "dependency_split", "missing_capability"]
        result = check_domain(domain.name, names=names, cache_dir=None)
        assert result.ok, result.text()
        assert result.oracle_clean == 1 and sum(c.applied for c in result.cells) >= 8
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()
