"""The process's one event loop for HTTP agents, in a daemon thread of its own: :func:`submit` and :func:`run`.

Every request of every ``openai:`` agent in flight is a task on this loop, so hundreds in flight cost one
thread, not one each. Callers in any other thread hand it coroutines: :func:`submit` returns a
``concurrent.futures.Future`` at once (the runner drives episodes from those), :func:`run` waits for the
result. A forked child starts a loop of its own at its first call (the parent's thread is not in it).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid = 0


def loop() -> asyncio.AbstractEventLoop:
    """The running background loop, started at the first call in this process."""
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            _loop, _pid = asyncio.new_event_loop(), os.getpid()
            ready = threading.Event()
            _thread = threading.Thread(target=_serve, args=(_loop, ready), name="openagent-http", daemon=True)
            _thread.start()
            ready.wait()
        return _loop


def _serve(running: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(running)
    running.call_soon(ready.set)
    running.run_forever()


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Run ``coro`` on the background loop; its future, at once."""
    return asyncio.run_coroutine_threadsafe(coro, loop())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and wait for its result (never call it from that loop's thread)."""
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError("background.run was called on the background loop's own thread, which would wait forever")
    return submit(coro).result()


def on_loop() -> bool:
    """Whether this thread is the background loop's."""
    return threading.current_thread() is _thread


__all__ = ["loop", "on_loop", "run", "submit"]
