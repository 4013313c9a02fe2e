"""``openagent env-serve``'s server as a Starlette app: the HTTP routes over :class:`Sessions` (``/reset``, ``/step``,
``/verify``, ``/state``, ``/close``, ``/health``, ``/metadata``), OpenEnv's wire (``sandbox.proxy.env_wire``), NeMo
Gym's (``sandbox.proxy.env_nemo_gym``: ``/seed_session``, ``/verify`` with a ``response``, ``/close_session``,
``/aggregate_metrics``, ``/reverify_mode``, ``POST /TOOL_NAME``) and each session's tools over MCP (streamable HTTP)
at ``/sessions/{session_id}/mcp``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sandbox.proxy.case_session import CaseSession, EpisodeOver
from sandbox.proxy.env_nemo_gym import COOKIE, NemoGym, aggregate_metrics
from sandbox.proxy.env_server import HttpError, Sessions
from sandbox.proxy.env_wire import SCHEMAS, openapi, rpc_endpoint, websocket_endpoint

if TYPE_CHECKING:
    from starlette.applications import Starlette


def _mcp_server(sessions: Sessions, name: str) -> Any:
    import anyio.to_thread
    import mcp_types
    from mcp.server import Server
    from mcp.server.lowlevel.server import NotificationOptions

    from sandbox.proxy.server import mcp_tool, observation_failed

    def session_of(ctx: Any) -> tuple[CaseSession, threading.Lock, str]:
        sid = ctx.request.path_params.get("session_id") if ctx.request is not None else None
        try:
            return sessions.get(sid)
        except HttpError as exc:
            raise ValueError(str(exc)) from None

    async def list_tools(ctx: Any, params: Any) -> Any:
        session, _, _ = session_of(ctx)
        return mcp_types.ListToolsResult(tools=[mcp_tool(s) for s in session.tools])

    async def call_tool(ctx: Any, params: Any) -> Any:
        session, lock, _ = session_of(ctx)

        def call() -> tuple[str, bool, bool]:
            with lock:
                before = session.revision
                try:
                    text = session.call(params.name, dict(params.arguments or {}))
                except EpisodeOver as exc:
                    return json.dumps({"error": "episode_over", "message": str(exc)}), True, False
                return text, observation_failed(text), session.revision != before

        text, failed, changed = await anyio.to_thread.run_sync(call)
        if changed:
            await ctx.session.send_notification(mcp_types.ToolListChangedNotification(),
                                                related_request_id=ctx.request_id)  # fmt: skip
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=failed)

    server = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    import functools

    server.create_initialization_options = functools.partial(  # type: ignore[method-assign]  # bound for the SDK's own call
        server.create_initialization_options, notification_options=NotificationOptions(tools_changed=True)
    )
    return server


def env_app(sessions: Sessions, name: str, metadata: dict[str, Any], host: str = "127.0.0.1") -> Starlette:
    """The server as a Starlette app: the HTTP routes above and MCP at ``/sessions/{session_id}/mcp``."""
    import anyio.to_thread
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import BaseRoute, Route, WebSocketRoute

    async def body_of(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise HttpError(400, "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise HttpError(400, f"the request body must be a JSON object, got {type(body).__name__}")
        return body

    def endpoint(handle: Callable[[dict[str, Any], Request], Any]) -> Callable[[Request], Any]:
        async def run(request: Request) -> Response:
            try:
                body = await body_of(request) if request.method == "POST" else dict(request.query_params)
                answer = await anyio.to_thread.run_sync(handle, body, request)
                return answer if isinstance(answer, Response) else JSONResponse(answer)
            except HttpError as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)

        return run

    nemo = NemoGym(sessions, name)

    def seed(body: dict[str, Any], request: Request) -> Response:
        answer, session_id = nemo.seed(body, request.cookies.get(COOKIE))
        response = JSONResponse(answer)
        response.set_cookie(COOKIE, session_id, httponly=True, samesite="lax")
        return response

    def verify(body: dict[str, Any], request: Request) -> Any:
        if "response" in body or "responses_create_params" in body:
            return nemo.verify(body, request.cookies.get(COOKIE))
        return sessions.verify(body.get("session_id"), body.get("answer"))

    def tool(body: dict[str, Any], request: Request) -> Response:
        text = nemo.tool(request.path_params["tool_name"], body, request.cookies.get(COOKIE))
        try:
            json.loads(text)
        except ValueError:
            return Response(text, media_type="text/plain")
        return Response(text, media_type="application/json")

    routes: list[BaseRoute] = [
        Route("/health", endpoint(lambda b, r: {"status": "healthy"}), methods=["GET"]),
        Route("/metadata", endpoint(lambda b, r: metadata), methods=["GET"]),
        Route("/reset", endpoint(lambda b, r: sessions.reset(b)), methods=["POST"]),
        Route("/step", endpoint(lambda b, r: sessions.step(b.get("session_id"), b.get("action"))), methods=["POST"]),
        Route("/verify", endpoint(verify), methods=["POST"]),
        Route("/state", endpoint(lambda b, r: sessions.state(b.get("session_id"))), methods=["GET"]),
        Route("/close", endpoint(lambda b, r: sessions.close(b.get("session_id"))), methods=["POST"]),
    ]
    routes += [
        Route("/schema", endpoint(lambda b, r: SCHEMAS), methods=["GET"]),
        Route("/mcp", rpc_endpoint(sessions), methods=["POST"]),
        WebSocketRoute("/ws", websocket_endpoint(sessions)),
        Route("/", endpoint(lambda b, r: {"status": "ok"}), methods=["GET"]),
        Route("/seed_session", endpoint(seed), methods=["POST"]),
        Route("/close_session", endpoint(lambda b, r: nemo.close(b)), methods=["POST"]),
        Route("/aggregate_metrics", endpoint(lambda b, r: aggregate_metrics(b)), methods=["POST"]),
        Route("/reverify_mode", endpoint(lambda b, r: "unsupported"), methods=["GET"]),
    ]
    described = openapi(name, routes)
    routes.append(Route("/openapi.json", endpoint(lambda b, r: described), methods=["GET"]))
    routes.append(Route("/{tool_name}", endpoint(tool), methods=["POST"]))  # last: every other route wins
    server = _mcp_server(sessions, name)
    return server.streamable_http_app(streamable_http_path="/sessions/{session_id}/mcp", host=host,
                                      custom_starlette_routes=routes)  # fmt: skip


__all__ = ["env_app"]
