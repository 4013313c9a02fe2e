"""The LLM proxy served: in this process for the episodes whose case injects model faults (:func:`episode_url`),
and as ``openagent llm-proxy`` (:func:`run_llm_proxy`)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from sandbox.errors import UsageError, require_extra
from sandbox.perturbations.model import ModelRoute
from sandbox.proxy.llm import LlmProxy, app, parse_faults


class ProxyThread:
    """An :class:`LlmProxy` served by uvicorn on a loopback port, in a daemon thread; the port is bound here, so
    it is this proxy's from the start."""

    def __init__(self, proxy: LlmProxy, host: str = "127.0.0.1", port: int | None = None) -> None:
        require_extra("mcp", ("uvicorn", "starlette"), "the LLM proxy")
        import uvicorn

        self.proxy = proxy
        self.host = host
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY: see
        self._socket.bind((host, port or 0))  # sandbox.proxy.server.HttpThread
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(app(proxy), host=host, port=self.port, log_level="warning", lifespan="on",
                                access_log=False)  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name=f"llm proxy :{self.port}", daemon=True)  # fmt: skip

    @property
    def url(self) -> str:
        """The proxy's own base URL, for requests that carry no episode (the proxy's ``--fault`` list)."""
        return f"http://{self.host}:{self.port}/v1"

    def episode_url(self, route: ModelRoute) -> tuple[str, str]:
        """The base URL of one episode's requests, and its token (:meth:`close` it when the episode ends)."""
        token = self.proxy.open(route)
        return f"http://{self.host}:{self.port}/s/{token}/v1", token

    def close(self, token: str) -> None:
        self.proxy.close(token)

    def start(self, timeout: float = 30.0) -> ProxyThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the LLM proxy did not start on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> ProxyThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_local: dict[str, ProxyThread] = {}
_local_lock = threading.Lock()


def local_proxy(upstream: str) -> ProxyThread:
    """This process' proxy in front of ``upstream`` (a base URL, ``.../v1``), started at its first use."""
    upstream = upstream.rstrip("/")
    with _local_lock:
        if upstream not in _local:
            _local[upstream] = ProxyThread(LlmProxy(upstream)).start()
        return _local[upstream]


def episode_url(upstream: str, route: Any) -> tuple[str, str]:
    """The base URL that one episode's model requests take to reach ``upstream`` through the faults of ``route``
    (what :func:`sandbox.agent.route_model` handed the agent), and the token to close when it ends."""
    if not isinstance(route, ModelRoute):
        raise TypeError(f"expected the episode's ModelRoute, got {type(route).__name__}")
    return local_proxy(upstream).episode_url(route)


def close_episode(upstream: str, token: str) -> None:
    with _local_lock:
        proxy = _local.get(upstream.rstrip("/"))
    if proxy is not None:
        proxy.close(token)


def check_upstream(upstream: str, timeout: float = 10.0) -> str:
    """``upstream`` if its ``GET /models`` answers as an OpenAI-compatible server does; else a
    :class:`UsageError` (it answered something else) or :class:`ConnectionError` (it did not answer)."""
    import httpx

    base = upstream.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UsageError(f"--upstream {upstream!r}: give the model server's base URL, e.g. http://127.0.0.1:8080/v1")
    try:
        response = httpx.get(f"{base}/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise ConnectionError(f"--upstream {base}: no answer to GET {base}/models ({type(exc).__name__}: {exc}); "
                              f"start the model server first, or fix the address") from None  # fmt: skip
    try:
        listing = response.json()
    except ValueError:
        listing = None
    if response.status_code != 200 or not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        hint = "" if base.endswith("/v1") else f"; its base URL is probably {base}/v1"
        raise UsageError(f"--upstream {base}: GET {base}/models answered HTTP {response.status_code} without an "
                         f"OpenAI model list, so it is not an OpenAI-compatible server{hint}")  # fmt: skip
    return base


def run_llm_proxy(upstream: str, faults: Sequence[str], *, seed: int = 0, host: str = "127.0.0.1", port: int = 8766,
                  timeout: float = 600.0) -> int:  # fmt: skip
    """Serve ``upstream`` through ``faults`` until the process is stopped."""
    require_extra("mcp", ("uvicorn", "starlette"), "the LLM proxy")
    import uvicorn

    specs = parse_faults(faults, seed)
    base = check_upstream(upstream)
    label = " + ".join(s.label() for s in specs) or "no faults (a pass-through)"
    print(f"openagent llm-proxy: {base} through {label}", file=sys.stderr, flush=True)
    print(f"openagent llm-proxy: serving on http://{host}:{port}/v1", file=sys.stderr, flush=True)

    def log(line: str) -> None:
        print(f"openagent llm-proxy: {line}", file=sys.stderr, flush=True)

    uvicorn.run(app(LlmProxy(base, specs, timeout, log)), host=host, port=port, log_level="warning")
    return 0


__all__ = ["ProxyThread", "check_upstream", "close_episode", "episode_url", "local_proxy", "run_llm_proxy"]
