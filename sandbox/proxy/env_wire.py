"""OpenEnv's own wire protocols for ``openagent env-serve``, as its clients (``openenv`` 0.10) speak them: ``/ws``,
``POST /mcp`` (JSON-RPC, what ``MCPToolClient`` sends), ``GET /schema`` and ``GET /openapi.json`` (what ``openenv
validate`` reads).

``/ws``: a connection without a ``session_id`` query opens a session of its own, closed with the connection; with
``?session_id=ID`` it attaches to an open session (one made by ``openenv/session/create`` or ``POST /reset``), which
outlives it. Messages are ``{"type": "reset"|"step"|"state"|"mcp"|"close", "data": ...}`` in and ``{"type":
"observation"|"state"|"mcp"|"error", "data": ...}`` out; ``verify`` (``data``: ``answer``) is ours. ``POST /mcp``
answers ``tools/list``, ``tools/call`` (with ``session_id`` in the params) and OpenEnv's ``openenv/session/create``
and ``openenv/session/close``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from sandbox.proxy.case_session import EpisodeOver
from sandbox.proxy.env_server import HttpError, Sessions, mcp_spec

METHODS = ("tools/list", "tools/call", "openenv/session/create", "openenv/session/close")
_RPC_CODES = {400: -32602, 404: -32602, 409: -32600, 422: -32600, 503: -32000}
_WS_CODES = {400: "VALIDATION_ERROR", 422: "VALIDATION_ERROR", 404: "SESSION_ERROR", 503: "CAPACITY_REACHED"}


def _reply(request_id: Any, result: Any = None, code: int = 0, message: str = "") -> dict[str, Any]:
    if code:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc(sessions: Sessions, request: Any, session_id: str | None = None) -> dict[str, Any]:
    """One JSON-RPC request of OpenEnv's ``/mcp``; ``session_id``: the ``/ws`` connection's own session, if any."""
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return _reply(None, code=-32600, message=f"a JSON-RPC request is an object with a method: {', '.join(METHODS)}")
    request_id, method, params = request.get("id"), request["method"], request.get("params", {})
    if method not in METHODS:
        known = ", ".join(METHODS)
        return _reply(request_id, code=-32601, message=f"Method not found: {method}; this server answers {known}")
    if not isinstance(params, dict):
        return _reply(request_id, code=-32602, message="params must be an object")
    try:
        if method == "openenv/session/create":
            return _reply(request_id, {"session_id": session_id or sessions.create()})
        if method == "openenv/session/close":
            target = params.get("session_id")
            if session_id is not None and target == session_id:
                return _reply(request_id, code=-32600, message="a /ws connection's own session closes with it")
            sessions.close(target)
            return _reply(request_id, {"session_id": target, "closed": True})
        case, lock, _ = sessions.get(session_id or params.get("session_id"))
        if method == "tools/list":
            tools = [mcp_spec(t) for t in case.tools]
            listed = [{"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
                      for t in tools]  # fmt: skip
            return _reply(request_id, {"tools": listed})
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            wanted = "tools/call needs name (a string) and arguments (an object)"
            return _reply(request_id, code=-32602, message=wanted)
        from sandbox.proxy.server import observation_failed

        with lock:
            before = case.revision
            text = case.call(name, arguments)
            changed = case.revision != before
        content = [{"type": "text", "text": text}]
        return _reply(request_id, {"content": content, "structured_content": None, "data": text,
                                   "is_error": observation_failed(text), "tools_changed": changed})  # fmt: skip
    except HttpError as exc:
        return _reply(request_id, code=_RPC_CODES.get(exc.status, -32000), message=str(exc))
    except EpisodeOver as exc:
        return _reply(request_id, code=-32600, message=str(exc))


def rpc_endpoint(sessions: Sessions) -> Callable[[Any], Any]:
    """``POST /mcp``: a JSON-RPC answer (HTTP 200) to every request, a parse error included, as OpenEnv's server."""
    import anyio.to_thread
    from starlette.responses import JSONResponse

    async def serve(request: Any) -> JSONResponse:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse(_reply(None, code=-32700, message="Parse error: the request body is not JSON"))
        return JSONResponse(await anyio.to_thread.run_sync(rpc, sessions, body))

    return serve


def websocket_endpoint(sessions: Sessions) -> Callable[[Any], Any]:
    """OpenEnv's ``/ws`` (see the module's docstring)."""
    import anyio.to_thread

    attached: set[str] = set()

    async def serve(websocket: Any) -> None:
        await websocket.accept()

        async def send(kind: str, data: dict[str, Any]) -> None:
            await websocket.send_text(json.dumps({"type": kind, "data": data}))

        requested = websocket.query_params.get("session_id")
        try:
            if requested:
                sessions.slot(requested)
                if requested in attached:
                    raise HttpError(409, f"session {requested!r} already has a /ws connection attached")
                attached.add(requested)
            sid = requested or sessions.create()
        except HttpError as exc:
            await send("error", {"message": str(exc), "code": _WS_CODES.get(exc.status, "SESSION_ERROR")})
            await websocket.close()
            return
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    message = json.loads(raw)
                    kind, data = message.get("type"), message.get("data") or {}
                except (ValueError, AttributeError):
                    await send("error", {"message": "a message is a JSON object with a type and data",
                                         "code": "INVALID_JSON"})  # fmt: skip
                    continue
                try:
                    if kind == "close":
                        break
                    if kind == "reset":
                        await send("observation", await anyio.to_thread.run_sync(sessions.reset, data, sid))
                    elif kind == "step":
                        await send("observation", await anyio.to_thread.run_sync(sessions.step, sid, data))
                    elif kind == "verify":
                        verdict = await anyio.to_thread.run_sync(sessions.verify, sid, data.get("answer"))
                        await send("observation", verdict)
                    elif kind == "state":
                        await send("state", sessions.state(sid))
                    elif kind == "mcp":
                        await send("mcp", await anyio.to_thread.run_sync(rpc, sessions, data, sid))
                    else:
                        await send("error", {"message": f"unknown message type {kind!r}: reset, step, state, mcp, "
                                             "verify or close", "code": "UNKNOWN_TYPE"})  # fmt: skip
                except HttpError as exc:
                    await send("error", {"message": str(exc), "code": _WS_CODES.get(exc.status, "EXECUTION_ERROR"),
                                         "status": exc.status})  # fmt: skip
        except Exception:  # the client went away
            pass
        finally:
            if requested:
                attached.discard(requested)
            else:
                with contextlib.suppress(HttpError):
                    sessions.close(sid)
            with contextlib.suppress(Exception):
                await websocket.close()

    return serve


_OBJECT = {"type": "object"}
ACTION_SCHEMA = {"oneOf": [
    {"type": "object", "properties": {"type": {"const": "list_tools"}}, "required": ["type"]},
    {"type": "object", "required": ["type", "tool_name"], "properties": {
        "type": {"const": "call_tool"}, "tool_name": {"type": "string"}, "arguments": _OBJECT}},
    {"type": "object", "required": ["type", "content"], "properties": {
        "type": {"const": "answer"}, "content": {"type": "string", "description": "the final reply"}}},
]}  # fmt: skip
_MESSAGES = {"type": "array", "items": _OBJECT}
_TOOLS = {"type": "array", "items": _OBJECT}
SCHEMAS = {
    "action": ACTION_SCHEMA,
    "observation": {"type": "object", "properties": {
        "tools": _TOOLS, "chat_tools": _TOOLS, "tool_name": {"type": "string"}, "result": {"type": "string"},
        "error": {"type": ["object", "null"]}, "tools_changed": {"type": "boolean"}, "messages": _MESSAGES}},
    "reset_observation": {"type": "object", "required": ["messages", "chat_tools"],
                          "properties": {"messages": _MESSAGES, "chat_tools": _TOOLS}},
    "state": {"type": "object", "properties": {
        "episode_id": {"type": ["string", "null"]}, "session_id": {"type": "string"}, "step_count": {"type": "integer"},
        "done": {"type": "boolean"}, "tools_revision": {"type": "integer"}}},
}  # fmt: skip
"""``GET /schema``: the action, observation and state schemas, as OpenEnv's ``SchemaResponse``."""


def openapi(title: str, routes: list[Any]) -> dict[str, Any]:
    """``GET /openapi.json``: the routes, under OpenEnv's HTTP API version (1.0.0), which ``openenv validate``
    reads to tell a simulation server (``/reset``, ``/step``, ``/state``) from a production one."""
    paths: dict[str, Any] = {}
    for route in routes:
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                paths.setdefault(route.path, {})[method.lower()] = {"responses": {"200": {"description": "OK"}}}
    return {"openapi": "3.1.0", "info": {"title": title, "version": "1.0.0"}, "paths": paths}


__all__ = ["SCHEMAS", "openapi", "rpc", "rpc_endpoint", "websocket_endpoint"]
