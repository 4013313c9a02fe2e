"""A server that dies mid-run is the world's failure, not the agent's: ``world_error``, never cached, never in a
rate; a measurement with world errors exits 4 naming the server, in ``openagent eval`` and in pytest (issue #45)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import SERVER, free_port, stdio, wait_for_port, write_tasks

from pytest_openagent.cli import main
from tests import toys

pytest_plugins = ["pytester"]


def _serve(port: int, *args: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    wait_for_port(port, process)
    return process


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _eval(url: str, tasks, cache) -> list[str]:
    return ["eval", "--agent", "oracle", "--mcp", url, "--tasks", str(tasks), "--tiers", "perception",
            "--names", "tool_name_noise", "--n", "4", "--cache-dir", str(cache)]  # fmt: skip


def test_an_http_server_that_dies_mid_run_exits_4_naming_it_and_nothing_of_it_is_cached(
    tmp_path, mcp_configured, capsys
):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    cache = tmp_path / "cache"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    process = _serve(port, "--fault", "crash", "--on", "get_note", "--after", "8")  # dies after the domain's checks
    try:
        code = main(_eval(url, tasks, cache))
    finally:
        _stop(process)
    captured = capsys.readouterr()
    assert code == 4, captured.out + captured.err
    assert "world_error" in captured.err and url in captured.err, captured.err
    stored = b"".join(p.read_bytes() for p in cache.rglob("pack-*.jsonl"))
    assert b'"world_error"' not in stored, "a world error is never cached"

    process = _serve(port)  # the server back: what failed runs again, and the oracle is right on every case
    report = tmp_path / "report.json"
    try:
        code = main([*_eval(url, tasks, cache), "--json", str(report)])
    finally:
        _stop(process)
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(report.read_text())
    assert data["meta"]["episodes_run"] > 0, out
    assert all(r["success"] and r["clean_success"] for r in data["records"]), out


def test_a_stdio_server_that_dies_is_the_episode_in_flights_world_error(tmp_path, mcp_configured, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    server = stdio("--fault", "crash", "--on", "get_note", "--after", "8")
    code = main(_eval(server, tasks, tmp_path / "cache"))
    err = capsys.readouterr().err
    assert code == 4 and "world_error" in err and "notes_server.py" in err, err


def test_in_pytest_a_dead_server_fails_the_run_naming_it_not_the_agent(pytester, mcp_configured):
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    write_tasks(pytester.path / "tasks.jsonl")
    pytester.makepyfile(test_notes="""
        import sandbox
        from sandbox.case import Case

        def test_reads_notes(agent):
            tasks = sandbox.tasks("mcp", "test")  # the domain is built, its checks done: now the server dies
            open("die", "w").close()
            for task in tasks:
                assert Case(task).run(agent).success
    """)  # fmt: skip
    server = stdio("--fault", "crash", "--on", "get_note", "--when", str(pytester.path / "die"))
    result = pytester.runpytest(f"--openagent-mcp={server}", "--openagent-mcp-tasks=tasks.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*WorldFailed*world_error*notes_server.py*"])


def test_a_stdio_server_that_hangs_while_the_domain_is_built_is_stopped_with_the_error(tmp_path, capsys):
    from sandbox.domains.mcp import mcp_domain
    from sandbox.errors import UsageError

    tasks = write_tasks(tmp_path / "tasks.jsonl")
    pid_file = tmp_path / "pid"
    server = stdio("--fault", "hang", "--on", "get_note", "--pid-file", str(pid_file))
    with pytest.raises(UsageError, match="hangs"):
        mcp_domain(server, tasks, name="notes-hangs-at-build", reset=None, timeout=2)
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    assert not stat.exists() or stat.read_text().split()[2] == "Z", "the server that hung is left running"
