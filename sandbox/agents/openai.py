"""``OpenAIAgent``: any OpenAI-compatible chat-completions server as an agent.

Built to survive a real server, on ``aiohttp`` (imported at the first request, so ``import sandbox`` stays
light; why not httpx: :mod:`sandbox.agents.http`), every request a task on the process's one event loop
(:mod:`sandbox.agents.background`), so hundreds in flight cost no thread each:

- **One deadline per request.** ``timeout`` bounds connect, send and the whole reply together, not
  each socket read: a server that trickles a byte at a time or hangs is cut at the deadline. A
  request that ran out of time alone is not retried, so a hung server costs one ``timeout`` per turn;
  one that had company in flight may have waited in the server's queue behind it (an engine that
  serves one request at a time), so it is retried once the in-flight limit has been cut.
- **Retries** with exponential backoff on connection errors and resets, 429 and 5xx. A
  ``Retry-After`` (seconds or an HTTP date) is honoured within ``[0, max_wait]``; one that is
  negative, not a number or not a date falls back to the backoff.
- **The API key stays with its server.** It is read from ``OPENAGENT_API_KEY`` or
  ``OPENAI_API_KEY`` at each request and kept nowhere (not in a repr, a fingerprint or a pickle).
  Redirects are followed only within the same origin (scheme, host and port), and for a POST only
  307/308, which keep the body; any other redirect is an error that names where it pointed.
- **A reply that cannot be read fails its own episode only**: it becomes a :class:`RequestFailed`,
  which the runner ends as ``agent_error``, while the other episodes go on.
- **Independent turns.** ``concurrency > 1`` and :meth:`OpenAIAgent.submit` tell :func:`sandbox.run_episodes`
  that turns are independent requests: it keeps that many episodes going at once, each advancing when its
  own reply arrives, instead of waiting for the slowest request of a round.
- **Adaptive concurrency.** ``concurrency`` (256 by default) is the most requests in flight; how
  many go at once adapts to the server (:class:`~sandbox.agents.inflight.InFlight`: more while it
  answers, half as many after a 429, a 503 or a missed deadline). ``adaptive=False`` keeps
  ``concurrency`` in flight whatever the server says. A request waiting to retry holds no slot.
- **The server's own account** (:meth:`OpenAIAgent.server_report`): its ``GET /models``, its
  ``Server`` header, and ``/version`` (vLLM, SGLang) or ``/props`` (llama.cpp) where it has them, with
  what the in-flight limit did; the evaluation core puts it in the report's ``server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from sandbox.agent import Message, Reply, RequestFailed, ToolSpec, Turn
from sandbox.agents import background, http
from sandbox.agents.inflight import InFlight
from sandbox.agents.openai_format import clip, read_reply, to_openai_messages
from sandbox.redact import API_KEY_VARS, redact

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
MODELS_TIMEOUT = 5.0
"""The deadline of the one ``GET /models`` that the fingerprint asks (the server's identity)."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_KEEPS_BODY = frozenset({307, 308})
_MAX_HOPS = 3
_CHAT = "/chat/completions"
_THROTTLES = frozenset({429, 503})
"""Statuses that say the server is overloaded: the in-flight limit is cut."""
_SELF_REPORTS = ("/version", "/props")
"""Where engines say what they are, at the server's root: vLLM and SGLang ``/version``, llama.cpp ``/props``."""


CLIENT_VERSION = "v3"
"""Part of the fingerprint: cached episodes of an older client are not served to this one."""


class OpenAIAgent:
    """Any OpenAI-compatible chat-completions server (vLLM, SGLang, TGI, ``transformers serve``).

    ``timeout`` is the deadline of one request (connect, send and the whole reply); ``retries``
    more tries follow a failed connection, a reset, a 429 or a 5xx, ``backoff * 2**attempt``
    seconds apart (or as ``Retry-After`` says), never more than ``max_wait``. ``concurrency`` is
    the most requests in flight, adapted to the server unless ``adaptive=False`` (see the module).
    ``top_p`` and ``seed`` are sent only when set.

    The API key is read from ``OPENAGENT_API_KEY`` or ``OPENAI_API_KEY`` at each request and kept
    nowhere else, so it never reaches a fingerprint, a report, a repr or a pickle.
    """

    def __init__(
        self,
        model: str,
        url: str = DEFAULT_OPENAI_URL,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 0.5,
        concurrency: int = 256,
        top_p: float | None = None,
        seed: int | None = None,
        max_wait: float = 30.0,
        adaptive: bool = True,
    ) -> None:
        self.model = model
        base = url.rstrip("/")
        self.url = base if base.endswith(_CHAT) else base + _CHAT
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.top_p = top_p
        self.seed = seed
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.concurrency = concurrency
        self.adaptive = adaptive
        self._setup()

    def _setup(self) -> None:
        self._lock = threading.RLock()  # the fingerprint asks the server once
        self._pool = _Pool()  # one aiohttp session (one connection pool), made at the first request
        weakref.finalize(self, self._pool.close)
        self._server: dict[str, Any] | str | None = None  # what GET /models said of this model
        self._about: dict[str, Any] = {}  # what the server said of itself (server_report)
        self._routes: dict[str, tuple[str, str]] = {}  # episode id -> (its URL through the LLM proxy, token)
        self.in_flight = InFlight(self.concurrency, adaptive=self.adaptive)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k not in ("_lock", "_pool", "in_flight", "_routes")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        server, about = state.pop("_server", None), state.pop("_about", {})
        state.setdefault("adaptive", True)
        vars(self).update(state)
        self._setup()
        self._server, self._about = server, about

    def __repr__(self) -> str:
        return f"OpenAIAgent(model={self.model!r}, url={self.url!r})"

    def sampling(self) -> dict[str, Any]:
        """The sampling settings sent with each request."""
        settings = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        settings.update({k: v for k, v in (("top_p", self.top_p), ("seed", self.seed)) if v is not None})
        return settings

    def fingerprint(self) -> str:
        """The client's version, model, URL, sampling settings, and the server's own account of the model
        (``GET /models``). Bump :data:`CLIENT_VERSION` when the way requests are built or replies read changes."""
        settings = "".join(f":{'t' if k == 'temperature' else k}={v}" for k, v in self.sampling().items())
        server = self.server_identity()
        return f"openai-{CLIENT_VERSION}:{self.model}@{self.url}{settings}:server={json.dumps(server, sort_keys=True)}"

    def server_identity(self) -> dict[str, Any] | str:
        """This model's entry in the server's ``GET /models`` (asked once), or ``"unreported"``.

        Scalar fields are kept (``id``, ``owned_by``, ``root``, ``parent``, ``max_model_len``, any
        version); ``created`` only when it is not the server's clock: vLLM, SGLang and LMDeploy
        stamp it with the time of the request, which would change the fingerprint on every run.
        """
        with self._lock:
            if self._server is None:
                self._server = self._ask_identity()
            return self._server

    def server_report(self) -> dict[str, Any]:
        """What the server said about itself, and what the in-flight limit did, for a report.

        ``models``: the scalar fields of each model its ``GET /models`` lists; ``server``: its ``Server``
        header; ``version`` and ``props``: the scalar fields of ``/version`` and ``/props`` where it answers
        them (each asked once, best effort); ``in_flight``: :meth:`InFlight.summary`.
        """
        self.server_identity()
        with self._lock:
            if not any(path in self._about for path in _SELF_REPORTS):
                for path in _SELF_REPORTS:
                    self._about[path] = self._ask_root(path)
            about = dict(self._about)
        report = {"models": about.get("models", "unreported"), "server": about.get("server")}
        report |= {path.strip("/"): about[path] for path in _SELF_REPORTS if about.get(path) is not None}
        return report | {"in_flight": self.in_flight.summary()}

    def _ask_root(self, path: str) -> dict[str, Any] | None:
        root = self.url[: -len(_CHAT)].removesuffix("/v1")
        try:
            data, _ = background.run(self._request("GET", root + path, None, MODELS_TIMEOUT, retries=0))
        except Exception:  # most servers have only one of these, or neither
            return None
        return _scalars(data) if isinstance(data, dict) else None

    def _ask_identity(self) -> dict[str, Any] | str:
        try:
            asked = time.time()
            models = self.url[: -len(_CHAT)] + "/models"
            listing, headers = background.run(self._request("GET", models, None, MODELS_TIMEOUT, 1))
            self._about["server"] = redact(", ".join(headers.getall("server", []))) or None
            entries = listing.get("data") if isinstance(listing, dict) else listing
            if not isinstance(entries, list):
                return "unreported"
            self._about["models"] = [_scalars(e) for e in entries[:16] if isinstance(e, dict)]
            entry = next(e for e in entries if isinstance(e, dict) and e.get("id") == self.model)
        except Exception:  # the server's identity is best effort; a run never fails for it
            return "unreported"
        kept = {k: v for k, v in _scalars(entry, clip=None).items() if k != "object"}
        created = kept.get("created")
        if isinstance(created, int | float) and abs(created - asked) < 600:
            del kept["created"]
        return kept

    def act(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        """One reply per turn, the requests sent together (up to the in-flight limit)."""
        return background.run(self._replies(turns))

    def route_model(self, episode_id: str, route: Any) -> None:
        """The episode's requests go through the LLM proxy, which injects its case's model faults."""
        from sandbox.proxy.llm_serve import episode_url

        base, token = episode_url(self.url[: -len(_CHAT)], route)
        with self._lock:
            self._routes[episode_id] = (base + _CHAT, token)

    def close(self, episode_ids: Sequence[str]) -> None:
        with self._lock:
            ended = [self._routes.pop(e) for e in episode_ids if e in self._routes]
        if ended:
            from sandbox.proxy.llm_serve import close_episode

            for _, token in ended:
                close_episode(self.url[: -len(_CHAT)], token)

    def submit(self, turn: Turn) -> Future[Reply | RequestFailed]:
        """The reply to one turn, as a future that is done when it arrives: the runner drives episodes by it."""
        return background.submit(self._reply(turn))

    async def _replies(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        return list(await asyncio.gather(*(self._reply(t) for t in turns)))

    async def _reply(self, turn: Turn) -> Reply | RequestFailed:
        routed = self._routes.get(turn.episode_id)
        try:
            data = await self.complete(turn.messages, turn.tools, url=routed[0] if routed else None)
        except (OSError, ValueError) as exc:
            return RequestFailed(redact(str(exc)))
        return read_reply(data)

    async def complete(self, messages: Sequence[Message], tools: list[ToolSpec], url: str | None = None) -> Any:
        """One chat-completions request (retried as the class says), to ``url`` (the agent's own by default); the
        decoded JSON reply.

        Raises ``OSError`` when the server cannot be reached or misses the deadline, ``ValueError``
        when it answers with an error, a redirect it may not take, or something that is not JSON.
        """
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages), **self.sampling()}
        if tools:
            body["tools"] = tools
        payload = json.dumps(body).encode()
        return (await self._request("POST", url or self.url, payload, self.timeout, self.retries))[0]

    async def _request(
        self, method: str, url: str, payload: bytes | None, timeout: float, retries: int
    ) -> tuple[Any, Any]:
        """The decoded JSON reply and its headers; each try holds an in-flight slot, a wait between tries none."""
        aiohttp = self._pool.aiohttp
        for attempt in range(retries + 1):
            wait = min(self.backoff * 2**attempt, self.max_wait)
            try:
                async with self.in_flight.slot() as permit:
                    try:
                        status, headers, data = await self._send(method, url, payload, timeout)
                    except TimeoutError:
                        permit.signal = "throttled"  # a missed deadline: a server with too much to do
                        raise
                    permit.signal = "throttled" if status in _THROTTLES else "answered"
            except TimeoutError:
                if permit.company == 0 or attempt == retries:
                    raise OSError(
                        f"{url} gave no complete reply within the {timeout:g} s deadline (connect, send and the "
                        f"whole reply{'' if permit.company == 0 else f', {attempt + 1} tries'}); raise the agent's "
                        f"timeout (OpenAIAgent(timeout=...)) if the server is just slow"
                    ) from None
            except (aiohttp.InvalidURL, aiohttp.ContentTypeError) as exc:
                raise ValueError(redact(f"{url}: {type(exc).__name__}: {exc}")) from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
                if attempt == retries:  # refused, reset, closed early: worth another try
                    raise OSError(
                        redact(f"{url} unreachable after {attempt + 1} tries: {type(exc).__name__}: {exc}")
                    ) from None
            else:
                if status < 300:
                    try:
                        return json.loads(data), headers
                    except ValueError:
                        raise ValueError(f"{url} answered HTTP {status} with no JSON: {clip(data)}") from None
                if (status != 429 and status < 500) or attempt == retries:
                    raise ValueError(f"{url} answered HTTP {status}: {clip(data)}")
                said = http.parse_retry_after(headers.get("retry-after"), self.max_wait)
                wait = wait if said is None else said
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _send(self, method: str, url: str, payload: bytes | None, timeout: float) -> tuple[int, Any, bytes]:
        """One exchange under one deadline (connect, send, every hop and the whole reply), following
        same-origin redirects only."""
        session = self._pool.session()
        async with asyncio.timeout(timeout):
            target = _url(url)
            for _ in range(_MAX_HOPS + 1):
                headers = {"Content-Type": "application/json"} if payload is not None else {}
                key = next((os.environ[v] for v in API_KEY_VARS if os.environ.get(v)), None)
                if key:
                    headers["Authorization"] = f"Bearer {key}"
                via, auth = self._pool.proxy(target)
                async with session.request(
                    method, target, data=payload, headers=headers, allow_redirects=False, proxy=via, proxy_auth=auth
                ) as response:
                    status, location = response.status, response.headers.get("location")
                    if status not in _REDIRECTS or not location:
                        return status, response.headers, await http.read_body(response)
                hop = target.join(_url(location))
                if http.origin(hop) != http.origin(target):
                    raise ValueError(
                        f"{target} redirected (HTTP {status}) to {hop}, another origin; not followed, so that host "
                        f"never sees the API key: point the agent's url at the new address if you trust it"
                    )
                if method != "GET" and status not in _KEEPS_BODY:
                    raise ValueError(
                        f"{target} redirected (HTTP {status}) to {hop}; only 307 and 308 keep a POST's body, "
                        f"so point the agent's url there"
                    )
                target = hop
            raise ValueError(f"{url} redirected more than {_MAX_HOPS} times")


class _Pool:
    """An agent's ``aiohttp`` session (its connection pool), made on the background loop at the first request
    and closed there when the agent is collected; it never holds a reference to the agent."""

    def __init__(self) -> None:
        self._session: Any = None
        self._aiohttp: Any = None
        self._proxies: dict[tuple[str, str, int | None], tuple[Any, Any]] = {}

    def proxy(self, url: Any) -> tuple[Any, Any]:
        """The proxy for ``url``'s origin, read from the environment at the origin's first request."""
        key = http.origin(url)
        if key not in self._proxies:
            self._proxies[key] = http.proxy(url)
        return self._proxies[key]

    @property
    def aiohttp(self) -> Any:
        if self._aiohttp is None:  # the module the session was made from: its exceptions are the ones raised
            self._aiohttp = http.load()
        return self._aiohttp

    def session(self) -> Any:
        if self._session is None or self._session.closed:  # on the loop's thread only: no lock needed
            self._aiohttp = self._aiohttp or http.load()
            self._session = http.session()
        return self._session

    def close(self) -> None:
        """Close the session on its loop: waited for (up to a few seconds) unless this is the loop's own thread
        (the garbage collector may run there), so that it is closed before the interpreter exits."""
        session, self._session = self._session, None
        if session is None or session.closed:
            return
        with contextlib.suppress(Exception):  # the loop is gone, or the close timed out: nothing left to free
            closing = background.submit(session.close())
            if not background.on_loop():
                closing.result(timeout=5)


def _url(text: str) -> Any:
    import yarl  # aiohttp's URLs

    return yarl.URL(text)


def _scalars(entry: dict[str, Any], clip: int | None = 300) -> dict[str, Any]:
    """The scalar fields of a server's JSON object, strings redacted (and cut to ``clip`` characters)."""
    kept: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, str):
            value = redact(value)
            kept[key] = value if clip is None or len(value) <= clip else value[:clip] + "..."
        elif value is None or isinstance(value, int | float):
            kept[key] = value
    return kept


__all__ = ["CLIENT_VERSION", "DEFAULT_OPENAI_URL", "OpenAIAgent", "read_reply", "to_openai_messages"]
