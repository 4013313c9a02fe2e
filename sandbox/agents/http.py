"""HTTP with deadlines, on ``httpx`` (imported at first use, so ``import sandbox`` stays light).

httpx's timeouts bound each socket operation, so a server that trickles a byte at a time can hold
a request for as long as it likes. Here a request has one deadline (:func:`deadline`), and a
network backend on the client's connection pools gives every connect, TLS handshake, read and
write only what is left of it. Also: ``Retry-After`` read safely, origins compared for redirects,
and reply bodies capped.
"""

from __future__ import annotations

import email.utils
import functools
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

MAX_REPLY_BYTES = 32 * 2**20
"""A reply larger than this is not a chat completion; reading on would only exhaust memory."""


def parse_retry_after(value: str | None, limit: float, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header, within ``[0, limit]``; ``None`` when it says nothing usable.

    Both forms of RFC 9110 are read: delay-seconds and an HTTP date (one in the past means now).
    A negative, non-finite or unreadable value is ``None``, so the caller backs off as usual.
    """
    if not value or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, limit)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread's request, inside the block, ends within ``seconds`` in all."""
    _deadline.end = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline.end = None


def origin(url: Any) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


def read_body(response: Any, httpx: Any) -> bytes:
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > MAX_REPLY_BYTES:
            raise ValueError(f"{response.url} sent a reply of more than {MAX_REPLY_BYTES} bytes")
        _left(httpx.ReadTimeout)  # the backend already bounds each read; this guards a transport without it
    return bytes(body)


# The deadline of the request this thread is making: httpx's timeouts bound each socket operation,
# so the network backend below gives each operation only what is left of the whole request's time.
_deadline = threading.local()


def _left(timeout_error: type[Exception], timeout: float | None = None) -> float | None:
    """The time an operation may take: ``timeout``, capped by what is left of this thread's deadline."""
    end = getattr(_deadline, "end", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise timeout_error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _httpx() -> tuple[Any, type]:
    """httpx, and a network backend that holds each operation to the request's deadline (built at first use)."""
    import httpcore
    import httpx

    # Keyed by the module: pytester's in-process runs unload what they imported, and a backend built on
    # the unloaded httpcore would not be the one the reloaded httpx's pools take.
    return httpx, _deadline_backend(httpcore)


@functools.cache
def _deadline_backend(httpcore: Any) -> type:
    class DeadlineStream(httpcore.NetworkStream):
        def __init__(self, inner: httpcore.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _left(httpcore.ReadTimeout, timeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            for start in range(0, len(buffer), 65536):  # each piece gets only what time is left
                self._inner.write(buffer[start : start + 65536], _left(httpcore.WriteTimeout, timeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return DeadlineStream(
                self._inner.start_tls(ssl_context, server_hostname, _left(httpcore.ConnectTimeout, timeout))
            )

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self, inner: httpcore.NetworkBackend) -> None:
            self._inner = inner

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            timeout = _left(httpcore.ConnectTimeout, timeout)
            return DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            timeout = _left(httpcore.ConnectTimeout, timeout)
            return DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return DeadlineBackend


def client(timeout: float, concurrency: int) -> Any:
    """One pooled client whose every transport (direct and proxied) keeps the deadline."""
    httpx, backend = _httpx()
    client = httpx.Client(
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=max(concurrency, 8)),
        follow_redirects=False,
    )
    # httpx takes no network backend, so it goes on each transport's httpcore pool; a transport
    # without one still has the deadline checked between reads of the body (see read_body).
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if getattr(pool, "_network_backend", None) is not None:
            pool._network_backend = backend(pool._network_backend)
    return client


def keeps_deadlines(client: Any) -> bool:
    """Whether every transport of ``client`` holds each socket operation to the deadline."""
    backend = _httpx()[1]
    pools = [getattr(t, "_pool", None) for t in (client._transport, *client._mounts.values()) if t is not None]
    return all(isinstance(getattr(p, "_network_backend", None), backend) for p in pools)
