"""HTTP for the ``openai:`` agent on ``aiohttp`` (imported at first use, so ``import sandbox`` stays light).

Why aiohttp and not ``httpx.AsyncClient``: httpcore's pool (1.0.9) scans every connection, with a ``poll``
call on each idle one, whenever it hands a request a connection, so its CPU per request grows with the
requests in flight (5.0 ms at 256 in flight here, against aiohttp's 0.09 ms; ``benchmarks/bench_openai.py``).

A socket timeout bounds each operation, so a server that trickles a byte at a time could hold a request
for as long as it likes; the agent holds each exchange to one deadline with ``asyncio.timeout`` instead,
which cancels connect, send and the reading of the whole reply together. Here: ``Retry-After`` read
safely, origins compared for redirects, reply bodies capped, and the pooled session.
"""

from __future__ import annotations

import email.utils
import math
import os
import ssl
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


def origin(url: Any) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or {"http": 80, "https": 443}.get(url.scheme)


async def read_body(response: Any) -> bytes:
    body = bytearray()
    async for chunk in response.content.iter_chunked(65536):
        body += chunk
        if len(body) > MAX_REPLY_BYTES:
            raise ValueError(f"{response.url} sent a reply of more than {MAX_REPLY_BYTES} bytes")
    return bytes(body)


def load() -> Any:
    """``aiohttp``, imported (pytester's in-process runs unload what a run first imported: load it before)."""
    import aiohttp

    return aiohttp


def session() -> Any:
    """One pooled session, made on the loop that will use it: no limit of its own on connections (the
    agent's in-flight limit is the limit), the CA bundle of ``certifi`` beside the system's unless
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names one. Not ``trust_env``: aiohttp would then look up the proxy
    and ``.netrc`` in a worker thread at every request; the agent asks :func:`proxy` once per origin instead."""
    aiohttp = load()
    context = ssl.create_default_context()
    if not (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")):
        try:
            import certifi

            context.load_verify_locations(certifi.where())
        except (ImportError, OSError):
            pass
    connector = aiohttp.TCPConnector(limit=0, ssl=context, keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=None, sock_read=None)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=True)


def proxy(url: Any) -> tuple[Any, Any]:
    """The proxy (and its credentials) that ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``NO_PROXY`` give ``url``, as
    curl and httpx read them; ``(None, None)`` for none."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        return get_env_proxy_for_url(url)
    except LookupError:
        return None, None
