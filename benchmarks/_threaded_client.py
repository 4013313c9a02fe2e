"""The ``openai:`` agent as it was before issue #43, kept only as the benchmark's baseline: a thread per request
(``httpx.Client``, one pool), episodes run by the runner's thread per episode (it defines no ``submit``), the
same in-flight limit behind a lock. Its request path is the old one less the per-operation deadline backend
(each socket operation gets the whole timeout; the benchmark's server never trickles). Delete it with the
comparison.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sandbox.agent import Reply, RequestFailed, Turn
from sandbox.agents.inflight import InFlight, Permit
from sandbox.agents.openai import OpenAIAgent, read_reply, to_openai_messages
from sandbox.redact import API_KEY_VARS

_THROTTLES = frozenset({429, 503})


class LockedInFlight:
    """The agent's in-flight limit, waited for by threads (the old ``InFlight``)."""

    def __init__(self, limit: InFlight) -> None:
        self.limit, self.cond = limit, threading.Condition()

    def acquire(self) -> Permit:
        with self.cond:
            permit = self.limit.admit()
            if permit is None:
                self.limit.counts["waits"] += 1
                while (permit := self.limit.admit()) is None:
                    self.cond.wait()
            return permit

    def release(self, permit: Permit) -> None:
        with self.cond:
            self.limit.release(permit)
            self.cond.notify_all()


class ThreadedOpenAIAgent(OpenAIAgent):
    """The old client: ``act`` sends each turn from a thread of its own; no ``submit``."""

    submit = None  # type: ignore[assignment]  # the old client has no submit: the runner then calls act

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._locked = LockedInFlight(self.in_flight)
        self._client: Any = None
        self._client_lock = threading.Lock()

    def act(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        if len(turns) <= 1 or self.concurrency <= 1:
            return [self._reply_sync(t) for t in turns]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(turns))) as pool:
            return list(pool.map(self._reply_sync, turns))

    def _reply_sync(self, turn: Turn) -> Reply | RequestFailed:
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(turn.messages), **self.sampling()}
        if turn.tools:
            body["tools"] = turn.tools
        try:
            return read_reply(self._request_sync(json.dumps(body).encode()))
        except (OSError, ValueError) as exc:
            return RequestFailed(str(exc))

    def _request_sync(self, payload: bytes) -> Any:
        import httpx

        for attempt in range(self.retries + 1):
            wait = min(self.backoff * 2**attempt, self.max_wait)
            permit = self._locked.acquire()
            try:
                status, headers, data = self._send_sync(payload)
                permit.signal = "throttled" if status in _THROTTLES else "answered"
            except httpx.TimeoutException:
                permit.signal = "throttled"
                if permit.company == 0 or attempt == self.retries:
                    raise OSError(f"{self.url} gave no complete reply within {self.timeout:g} s") from None
                continue
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise OSError(f"{self.url} unreachable after {attempt + 1} tries: {exc}") from None
                continue
            finally:
                self._locked.release(permit)
            if status < 300:
                return json.loads(data)
            if (status != 429 and status < 500) or attempt == self.retries:
                raise ValueError(f"{self.url} answered HTTP {status}")
            said = headers.get("retry-after")
            time.sleep(min(float(said), self.max_wait) if said else wait)
        raise AssertionError("unreachable")

    def _send_sync(self, payload: bytes) -> tuple[int, Any, bytes]:
        headers = {"Content-Type": "application/json"}
        key = next((os.environ[v] for v in API_KEY_VARS if os.environ.get(v)), None)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        with self._http().stream("POST", self.url, content=payload, headers=headers) as response:
            return response.status_code, response.headers, response.read()

    def _http(self) -> Any:
        import httpx

        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=max(self.concurrency, 8)),
                )  # fmt: skip
            return self._client
