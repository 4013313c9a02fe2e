"""Fixtures for the MCP tests: the notes server in memory, over stdio and over streamable HTTP on a free port.

Every test module here starts with ``pytest.importorskip("mcp", ...)``: without the ``mcp`` extra they skip.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# pytester's in-process runs (test_config.py) unload the modules first imported during a run; Hypothesis and the
# decorator load lazily, so load them here once, as tests/plugin/conftest.py does.
import hypothesis.database  # noqa: F401
import pytest

import pytest_openagent.decorator  # noqa: F401
from tests.processes import cpu_seconds

HERE = Path(__file__).parent
SERVER = HERE / "notes_server.py"
sys.path.insert(0, str(HERE))


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stdio(*args: str) -> str:
    """The stdio address of the notes server started with ``args``."""
    return " ".join(["stdio:" + sys.executable, str(SERVER), *args])


def wait_for_port(port: int, process: subprocess.Popen, stall: float = 120) -> None:
    """Until something listens on ``port``: as long as ``process`` lives and keeps using CPU (a loaded machine only
    slows it down); it exiting, or ``stall`` seconds with no CPU used, is an error."""
    seen, since = cpu_seconds(process.pid), time.monotonic()
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {process.stderr.read()[-2000:]}")
        with contextlib.closing(socket.socket()) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        now = cpu_seconds(process.pid)
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since > stall:
            raise RuntimeError(f"nothing listens on port {port}, and the server used no CPU for {stall:g}s")
        time.sleep(0.05)


@contextlib.contextmanager
def http_notes(*args: str) -> Iterator[str]:
    """The notes server over streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def notes_url() -> Iterator[str]:
    pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")
    with http_notes() as url:
        yield url


def write_tasks(path: Path) -> Path:
    """The notes tasks (tests/mcp/notes_tasks.py) as a JSONL file, as a user writes them."""
    import dataclasses
    import json

    from notes_tasks import TASKS

    rows = []
    for task in TASKS:
        row = {k: v for k, v in dataclasses.asdict(task).items() if v not in (None, (), {}, "user", 0)}
        row["plan"] = [c.model_dump(mode="json") for c in task.plan]
        rows.append(json.dumps({k: v for k, v in row.items() if v != []}))
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def mcp_configured() -> Iterator[None]:
    """Puts back the configured MCP server (environment and the registered 'mcp' domain) after the test."""
    import os

    from sandbox.domains import DOMAINS
    from sandbox.domains.mcp import ENV_SERVER, ENV_SETTINGS, ENV_TASKS, NAME

    saved = {k: os.environ.get(k) for k in (ENV_SERVER, ENV_TASKS, ENV_SETTINGS)}
    yield
    held = DOMAINS.pop(NAME, None)
    if held is not None:
        held.close()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def proxy_process(*args: str) -> tuple[subprocess.Popen, str]:
    """``openagent mcp-proxy`` over streamable HTTP on a free port, upstream the notes server over stdio."""
    port = free_port()
    command = [sys.executable, "-m", "pytest_openagent.cli", "mcp-proxy", "--upstream", f"stdio:{sys.executable} "
               f"{SERVER}", "--transport", "http", "--port", str(port), *args]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}/mcp"
