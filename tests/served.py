"""A checkpoint served by a real OpenAI-compatible server on loopback: ``transformers serve`` (the dev extra)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def transformers_serve(checkpoint: str | Path, start_timeout: float = 120) -> Iterator[str]:
    """The server's ``/v1`` URL while ``transformers serve`` serves ``checkpoint`` on CPU in float32; the test
    fails with the server's output if it exits or does not answer ``/health`` within ``start_timeout`` seconds."""
    port = _free_port()
    command = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve", str(checkpoint),
               "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{process.stdout.read()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if json.loads(response.read()).get("status") == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not answer /health within {start_timeout:g} s")
            time.sleep(0.5)
        yield f"{url}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
