"""A checkpoint served by a real OpenAI-compatible server on loopback: ``transformers serve`` (the dev extra)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def transformers_serve(checkpoint: str | Path, start_timeout: float = 120) -> Iterator[str]:
    """The server's ``/v1`` URL while ``transformers serve`` serves ``checkpoint`` on CPU in float32; the test
    fails with the server's output if it exits or does not answer within ``start_timeout`` seconds."""
    from training.serving import transformers_server

    try:
        server = transformers_server(checkpoint, wait=start_timeout)
        url = server.__enter__()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
