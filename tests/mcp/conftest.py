"""Fixtures for the MCP tests: the notes server in memory, over stdio and over streamable HTTP on a free port.

Every test module here starts with ``pytest.importorskip("mcp")``: without the ``mcp`` extra they skip.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def wait_for_port(port: int, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {process.stderr.read()[-2000:]}")
        with contextlib.closing(socket.socket()) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {seconds}s")


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
    pytest.importorskip("mcp")
    with http_notes() as url:
        yield url
