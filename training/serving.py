"""Inference engines we did not write, serving a checkpoint on loopback with an OpenAI-compatible API:
llama.cpp's server (``llama-cpp-python[server]``, the ``serve`` extra) for a GGUF file, and ``transformers
serve`` for a checkpoint directory. Each is started on a free port and stopped with the block; the
tests and ``benchmarks/bench_serving.py`` drive them.

    with llama_cpp_server(gguf_file, alias="smollm2") as url:
        report = evaluate(f"openai:smollm2@{url}")

A user starts the same servers from a shell (docs/serving.md); this only saves a script the waiting.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.errors import UsageError

STALL = 120.0
"""Seconds a starting server may go without any sign of progress (its log growing, its CPU time rising) before it
is given up on. Not a budget for the start: on a loaded machine a server takes as long as it takes, as long as it
is alive and moving; one that exits or stalls is reported with its log."""
INSTALL_HINT = "pip install -e '.[serve]' (builds llama.cpp from source: cmake and a C++ compiler; docs/serving.md)"


def llama_cpp_command(
    gguf: str | Path, alias: str, port: int, threads: int | None = None, n_ctx: int = 8192
) -> list[str]:
    """The server's command line: the model under ``alias``, on 127.0.0.1:``port``."""
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    return cmd + (["--n_threads", str(threads)] if threads else [])


@contextmanager
def llama_cpp_server(
    gguf: str | Path, alias: str = "model", threads: int | None = None, n_ctx: int = 8192, wait: float = STALL
) -> Iterator[str]:
    """llama.cpp serving ``gguf`` as ``alias``; its base URL (``.../v1``) once ``GET /v1/models`` answers (``wait``:
    see :data:`STALL`)."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        raise UsageError(f"llama.cpp's server is not installed: {INSTALL_HINT}")
    port = _free_port()
    with _running(llama_cpp_command(gguf, alias, port, threads, n_ctx), "llama.cpp's server", port, wait) as url:
        yield url


@contextmanager
def transformers_server(
    checkpoint: str | Path, device: str = "cpu", dtype: str = "float32", wait: float = STALL
) -> Iterator[str]:
    """``transformers serve`` on ``device`` in ``dtype`` (its model named by the checkpoint's path); its base URL."""
    port = _free_port()
    cmd = [sys.executable, "-c", "from transformers.cli.transformers import main; main()", "serve", str(checkpoint)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--device", device, "--dtype", dtype]
    with _running(cmd, "transformers serve", port, wait) as url:
        yield url


def _progress(process: subprocess.Popen, log: Path) -> tuple[int, int]:
    """What changes while a server starts: its log's size and its CPU ticks (Linux; 0 elsewhere)."""
    try:
        size = log.stat().st_size
    except OSError:
        size = 0
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime and stime
    except (OSError, IndexError, ValueError):
        ticks = 0
    return size, ticks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _running(cmd: list[str], name: str, port: int, wait: float) -> Iterator[str]:
    log = Path(tempfile.gettempdir()) / f"openagent-server-{port}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # nothing downloads while serving
    with open(log, "w") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        seen, since = _progress(process, log), time.monotonic()
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break  # listening: llama.cpp loads its model before, transformers serve at first use
            except urllib.error.HTTPError:
                break  # an answer all the same
            except OSError:
                pass
            now = _progress(process, log)
            if now != seen:
                seen, since = now, time.monotonic()
            elif time.monotonic() - since > wait:
                raise RuntimeError(f"{name} made no progress for {wait:g} s (its log and its CPU time still) and "
                                   f"does not answer GET /v1/models; its log: {log}")  # fmt: skip
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
