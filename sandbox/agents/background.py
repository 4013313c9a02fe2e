"""The process's one event loop for HTTP agents, in a daemon thread of its own: :func:`submit` and :func:`run`.

Every request of every ``openai:`` agent in flight is a task on this loop, so hundreds in flight cost one
thread, not one each. Callers in any other thread hand it coroutines: :func:`submit` returns a
``concurrent.futures.Future`` at once (the runner drives episodes from those), :func:`run` waits for the
result. A forked child starts a loop of its own at its first call (the parent's thread is not in it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid = 0
_pending: list[tuple[Coroutine[Any, Any, Any], Future[Any]]] = []
"""Coroutines submitted and not yet started on the loop."""


def loop() -> asyncio.AbstractEventLoop:
    """The running background loop, started at the first call in this process."""
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            _loop, _pid = asyncio.new_event_loop(), os.getpid()
            _pending.clear()  # a forked child's copy of its parent's: they run there, not here
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
    """Run ``coro`` on the background loop; its future, at once.

    Coroutines submitted while the loop has not yet taken the last ones go with them: one wake-up of the loop
    (a write to its self-pipe) for a burst, not one each.
    """
    running = loop()
    future: Future[T] = Future()
    with _lock:
        _pending.append((coro, future))
        wake = len(_pending) == 1
    if wake:
        running.call_soon_threadsafe(_start_pending)
    return future


def _start_pending() -> None:
    global _pending
    with _lock:
        taken, _pending = _pending, []
    for coro, future in taken:
        if future.set_running_or_notify_cancel():
            asyncio.ensure_future(coro).add_done_callback(functools.partial(_settle, future))
        else:
            coro.close()


def _settle(future: Future[Any], task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        future.set_exception(CancelledError())
    elif (exc := task.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(task.result())


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
