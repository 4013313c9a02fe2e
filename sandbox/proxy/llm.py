"""A perturbing LLM proxy: an OpenAI-compatible server in front of the agent's own model, the mirror of the MCP proxy.

Requests pass to the upstream as they are (streamed replies byte for byte), except where a model fault is due:
then the proxy answers in the model's place (an HTTP error, an empty reply, a refusal, a claim of success) or
rewrites the upstream's completion (malformed arguments, an unknown tool, a cut reply), non-streaming or as an
SSE stream of chat-completion chunks, as the request asked. Which faults, and from which turn, is a
:class:`~sandbox.perturbations.model.ModelRoute`'s to say: one per episode, reached by the path
``/s/TOKEN/v1/...`` (:meth:`LlmProxy.open` makes one); one per conversation (its first user message) under the
faults the path names, ``/f/FAULTS/v1/...`` (``FAULTS`` as ``--fault`` takes them: ``model_refusal:2@1,...``), or
under the proxy's own faults for ``/v1/...`` (``openagent llm-proxy --fault``).

Served by Starlette on uvicorn and calling the upstream with httpx's async client: the ``mcp`` extra brings the
first two (its streamable HTTP transport runs on them) and the core the third, so the proxy adds no dependency;
one event loop holds every request in flight while the model computes.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.errors import UsageError, did_you_mean
from sandbox.perturbations.model import ModelFault, ModelRoute

_FORWARDED = ("authorization", "content-type", "accept", "openai-organization", "openai-project")
_tokens = itertools.count()


class LlmProxy:
    """The proxy's state: its upstream (an OpenAI-compatible base URL, ``.../v1``), the episodes' routes by
    token, and the faults of requests that come without one."""

    def __init__(self, upstream: str, faults: tuple[ModelFault, ...] = (), timeout: float = 600.0,
                 log: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.upstream = upstream.rstrip("/")
        self.faults = faults
        self.timeout = timeout
        self.log = log
        """Told each fault as it is injected, in one line (``openagent llm-proxy`` prints them)."""
        self.routes: dict[str, ModelRoute] = {}
        self._conversations: dict[str, ModelRoute] = {}
        self._lock = threading.Lock()

    def open(self, route: ModelRoute) -> str:
        """A token for ``route``: requests under ``/s/TOKEN/v1`` go by it."""
        token = f"{next(_tokens)}-{secrets.token_hex(4)}"
        with self._lock:
            self.routes[token] = route
        return token

    def close(self, token: str) -> None:
        with self._lock:
            self.routes.pop(token, None)

    def route(self, token: str | None, body: dict[str, Any], named: str | None = None) -> ModelRoute | None:
        """The route of a request: its episode's (``token``), else its conversation's under the faults its path
        names (``named``, as ``--fault`` takes them) or, without, the proxy's own."""
        if token is not None:
            with self._lock:
                return self.routes.get(token)
        faults = self.faults if named is None else parse_faults([named], where=f"the path's /f/{named}")
        if not faults:
            return None
        first = next((m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"), {})
        key = hashlib.sha256(json.dumps([named, first.get("content")], sort_keys=True).encode()).hexdigest()
        with self._lock:
            return self._conversations.setdefault(key, ModelRoute(faults))


def parse_faults(items: Sequence[str], seed: int = 0, where: str = "--fault") -> tuple[ModelFault, ...]:
    """``NAME[:SEVERITY][@ONSET]`` items as model-fault specs; a name that is not a model fault is named, with
    ``where`` it was given."""
    from sandbox.perturbations import registry
    from sandbox.proxy.serve import parse_perturbations

    model = [n for n in registry.names(model_faults=True) if registry.get(n).model_fault]
    for item in (part.strip() for text in items for part in text.split(",")):
        name = item.partition("@")[0].partition(":")[0].strip()
        if name and name not in model:
            raise UsageError(f"{where}: {did_you_mean('model fault', name, model)}")
    specs = parse_perturbations(items, seed)
    return tuple(s for s in specs if isinstance(s, ModelFault))


def turn_of(body: dict[str, Any]) -> int:
    """The completions the conversation already holds: its assistant messages."""
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")


def tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def skeleton(body: dict[str, Any]) -> dict[str, Any]:
    """A completion with nothing in it yet, for a fault that answers in the model's place."""
    choice = {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
    return {"id": f"chatcmpl-openagent-{secrets.token_hex(6)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", ""), "choices": [choice],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}  # fmt: skip


def sse_chunks(completion: dict[str, Any], usage: bool = False) -> list[bytes]:
    """``completion`` as the server-sent events of a streamed reply: role, text, each call (its arguments in two
    pieces, as servers stream them), the finish reason, the usage where asked, and ``[DONE]``."""
    head = {"id": completion.get("id", "chatcmpl-openagent"), "object": "chat.completion.chunk",
            "created": completion.get("created", int(time.time())), "model": completion.get("model", "")}  # fmt: skip
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n".encode()

    out = [event({"role": "assistant", "content": ""})]
    if message.get("content"):
        out.append(event({"content": message["content"]}))
    if message.get("refusal"):
        out.append(event({"refusal": message["refusal"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        args = function.get("arguments")
        args = args if isinstance(args, str) else json.dumps(args or {})
        start = {"index": i, "id": call.get("id") or f"call_{i}", "type": "function",
                 "function": {"name": function.get("name", ""), "arguments": ""}}  # fmt: skip
        out.append(event({"tool_calls": [start]}))
        for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
            if piece:
                out.append(event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(event({}, choice.get("finish_reason") or "stop"))
    if usage:
        data = {**head, "choices": [], "usage": completion.get("usage") or {}}
        out.append(f"data: {json.dumps(data)}\n\n".encode())
    return [*out, b"data: [DONE]\n\n"]


def app(proxy: LlmProxy) -> Any:
    """The proxy as a Starlette app: ``/s/TOKEN/v1/...`` and ``/v1/...``, every method."""
    import httpx
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    clients: dict[str, httpx.AsyncClient] = {}

    async def upstream(method: str, path: str, headers: dict[str, str], content: bytes, query: str,
                       stream: bool) -> httpx.Response:  # fmt: skip
        url = f"{proxy.upstream}/{path}" + (f"?{query}" if query else "")
        request = clients["http"].build_request(method, url, headers=headers, content=content)
        return await clients["http"].send(request, stream=stream)

    async def passed(response: httpx.Response) -> Response:
        kept = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "retry-after")}
        return StreamingResponse(response.aiter_bytes(), status_code=response.status_code, headers=kept,
                                 background=BackgroundTask(response.aclose))  # fmt: skip

    def told(route: ModelRoute, turn: int) -> None:
        if proxy.log is not None and route.injected:
            last = route.injected[-1]
            proxy.log(f"{last['fault']} at turn {turn} ({last['did']}), request {last['request']} of its conversation")

    async def handle(request: Request) -> Response:
        try:
            return await serve(request)
        except httpx.HTTPError as exc:  # the upstream failed: the harness gets a gateway error, as from any proxy
            message = f"openagent llm-proxy: the upstream {proxy.upstream} failed: {type(exc).__name__}: {exc}"
            return JSONResponse({"error": {"message": message, "type": "upstream_error", "code": 502}}, 502)

    async def serve(request: Request) -> Response:
        token = request.path_params.get("token")
        path = request.path_params["path"]
        if token is not None and token not in proxy.routes:
            return JSONResponse({"error": {"message": f"no episode {token} at this proxy (it ended)"}}, 404)
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARDED}
        raw = await request.body()
        body: Any = None
        if request.method == "POST" and path.rstrip("/") == "chat/completions":
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        try:
            route = proxy.route(token, body, request.path_params.get("faults")) if isinstance(body, dict) else None
        except UsageError as exc:
            return JSONResponse({"error": {"message": f"openagent llm-proxy: {exc}", "type": "invalid_request_error",
                                           "code": 400}}, 400)  # fmt: skip
        if route is None:  # nothing to fault: the upstream's reply as it is
            return await passed(await upstream(request.method, path, headers, raw, request.url.query, True))
        turn, tools = turn_of(body), tool_names(body)
        http_fault, due = route.decide(turn)
        if http_fault is not None:
            status, extra, payload = http_fault.error()
            told(route, turn)
            return JSONResponse(payload, status, headers=extra)
        streamed = bool(body.get("stream"))
        if not due:
            route.served(turn, None, False)
            return await passed(await upstream(request.method, path, headers, raw, request.url.query, True))
        completion = skeleton(body)
        if route.needs_upstream(due):
            asked = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
            response = await upstream("POST", path, headers, json.dumps(asked).encode(), request.url.query, False)
            try:
                answered = response.json() if response.status_code == 200 else None
            except ValueError:
                answered = None
            if not isinstance(answered, dict):  # the upstream's own failure: the harness gets it as it is
                route.served(turn, None, False)
                kept = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "retry-after")}
                return Response(response.content, response.status_code, headers=kept)
            completion = answered
        faulted = route.rewrite(due, turn, completion, tools)
        route.served(turn, faulted or completion, faulted is not None)
        if faulted is not None:
            told(route, turn)
        reply = faulted or completion
        if streamed:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Response(b"".join(sse_chunks(reply, usage)), media_type="text/event-stream")
        return JSONResponse(reply)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        async with httpx.AsyncClient(timeout=httpx.Timeout(proxy.timeout), limits=limits) as client:
            clients["http"] = client
            yield

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
    routes = [Route("/s/{token}/v1/{path:path}", handle, methods=methods),
              Route("/f/{faults}/v1/{path:path}", handle, methods=methods),
              Route("/v1/{path:path}", handle, methods=methods)]  # fmt: skip
    return Starlette(routes=routes, lifespan=lifespan)


__all__ = ["LlmProxy", "app", "parse_faults", "skeleton", "sse_chunks", "tool_names", "turn_of"]
