"""A domain's perturbed world as an RL environment server: OpenEnv's HTTP shape, the tools over MCP, one episode a
session (``openagent env-serve``).

Following OpenEnv's conventions (``openenv.core.env_server``): ``POST /reset`` (a ``seed``, or an explicit case:
``task``, ``tier``, ``stack``, ``severity``) answers ``{observation, reward, done, metadata}``; ``POST /step`` takes
an ``action`` of type ``list_tools``, ``call_tool`` (``tool_name``, ``arguments``) or ``answer`` (``content``: the
final reply, which the judge reads); ``GET /state``, ``GET /health``, ``GET /metadata``; and OpenEnv's ``/ws``,
where a connection is one session (the wire format its ``EnvClient`` speaks). Beside them, ``POST /verify``
answers the judge's outcome and the reward, and the episode's tools are served over MCP (streamable HTTP) at
``/sessions/{session_id}/mcp``, where ``tools/list`` gives the case's perturbed surface and a drift sends
``notifications/tools/list_changed``. Every HTTP request names its session (the ``session_id`` that ``/reset``
returned); sessions share nothing. OpenEnv reserves the tool names ``reset``, ``step``, ``state`` and ``close``: a
case offering one is refused. Misuse is an HTTP 4xx with ``{"error": message}``, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sandbox.errors import UsageError
from sandbox.proxy.case_session import CaseSession, EpisodeOver

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from sandbox.case import Case
    from sandbox.trajectory import Episode

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})
"""OpenEnv's reserved names (``openenv.core.env_server.mcp_types.RESERVED_TOOL_NAMES``)."""

Draw = Callable[[dict[str, Any]], "Case"]
"""``draw(request)``: the case a ``/reset`` body asks for (``seed``, ``task``, ``tier``, ``stack``, ``severity``);
raises :class:`UsageError` on a request no case answers."""


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Sessions:
    """The live sessions by id, each a :class:`CaseSession` with its own lock, at most ``limit`` at once."""

    def __init__(self, draw: Draw, reward: Callable[[Episode], float], limit: int = 1024) -> None:
        self.draw, self.reward, self.limit = draw, reward, limit
        self._sessions: dict[str, tuple[CaseSession, threading.Lock, str]] = {}
        self._lock = threading.Lock()

    def reset(self, body: dict[str, Any]) -> dict[str, Any]:
        episode_id = body.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            raise HttpError(400, f"episode_id must be a string, got {type(episode_id).__name__}")
        try:
            case = self.draw(body)
        except UsageError as exc:
            raise HttpError(400, str(exc)) from None
        session = CaseSession(case)
        reserved = sorted(RESERVED_TOOL_NAMES & {t["function"]["name"] for t in session.tools})
        if reserved:
            raise HttpError(422, f"the case offers a tool named {', '.join(reserved)}, a name OpenEnv reserves")
        with self._lock:
            if len(self._sessions) >= self.limit:
                raise HttpError(503, f"{self.limit} sessions are open; close one (POST /close) before another reset")
            session_id = uuid.uuid4().hex
            self._sessions[session_id] = (session, threading.Lock(), episode_id or session_id)
        return self._answer(session_id, {"messages": session.messages, "tools": session.tools})

    def get(self, session_id: Any) -> tuple[CaseSession, threading.Lock, str]:
        if not isinstance(session_id, str) or not session_id:
            raise HttpError(400, "no session_id: give the session_id that POST /reset returned")
        with self._lock:
            found = self._sessions.get(session_id)
        if found is None:
            raise HttpError(404, f"no session {session_id!r}: it was closed, or never opened (POST /reset opens one)")
        return found

    def step(self, session_id: Any, action: Any) -> dict[str, Any]:
        session, lock, _ = self.get(session_id)
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise HttpError(400, "action must be an object with a type: list_tools, call_tool or answer")
        kind = action["type"]
        with lock:
            try:
                if kind == "list_tools":
                    return self._answer(session_id, {"tools": session.tools})
                if kind == "call_tool":
                    name, arguments = action.get("tool_name"), action.get("arguments", {})
                    if not isinstance(name, str) or not isinstance(arguments, dict):
                        raise HttpError(400, "call_tool needs tool_name (a string) and arguments (an object)")
                    before = session.revision
                    result = session.call(name, arguments)
                    return self._answer(session_id, {"result": result, "tools_changed": session.revision != before})
                if kind == "answer":
                    content = action.get("content")
                    if not isinstance(content, str):
                        raise HttpError(400, "answer needs content: the final reply, as a string")
                    session.answer(content)
                    return self._answer(session_id, {"messages": session.messages[-1:]})
            except EpisodeOver as exc:
                raise HttpError(409, str(exc)) from None
        raise HttpError(400, f"unknown action type {kind!r}: list_tools, call_tool or answer")

    def verify(self, session_id: Any, answer: Any = None) -> dict[str, Any]:
        session, lock, _ = self.get(session_id)
        with lock:
            if answer is not None and not session.done:
                if not isinstance(answer, str):
                    raise HttpError(400, "answer must be a string: the final reply")
                session.answer(answer)
            if session.episode is None:
                if not session.calls:
                    raise HttpError(409, "verify before any step: call tools, then send the final answer")
                raise HttpError(409, "the episode has not ended: send its final answer (a step of type answer)")
            episode = session.episode
        return {"outcome": episode.outcome, "reward": float(self.reward(episode)), "ending": episode.ending,
                "solvable": episode.solvable, "done": True, "steps": len(episode.steps)}  # fmt: skip

    def state(self, session_id: Any) -> dict[str, Any]:
        session, _, episode_id = self.get(session_id)
        return {"episode_id": episode_id, "session_id": session_id, "step_count": session.calls, "done": session.done}

    def close(self, session_id: Any) -> dict[str, Any]:
        self.get(session_id)
        with self._lock:
            self._sessions.pop(session_id, None)
        return {"closed": session_id}

    def _answer(self, session_id: str, observation: dict[str, Any]) -> dict[str, Any]:
        session, _, episode_id = self._sessions[session_id]
        episode = session.episode
        reward = float(self.reward(episode)) if episode is not None else None
        metadata = {"session_id": session_id, "episode_id": episode_id, "mcp": f"/sessions/{session_id}/mcp"}
        if episode is not None:
            metadata["outcome"] = episode.outcome
        return {"observation": observation, "reward": reward, "done": episode is not None, "metadata": metadata}


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


def _websocket(sessions: Sessions) -> Callable[[Any], Any]:
    """OpenEnv's ``/ws``: a connection is one session; ``{"type": "reset"|"step"|"state"|"close", "data": ...}`` in,
    ``{"type": "observation"|"state"|"error", "data": ...}`` out; ``verify`` (``data``: ``answer``) is ours."""
    import anyio.to_thread

    async def serve(websocket: Any) -> None:
        await websocket.accept()
        sid: str | None = None
        try:
            while True:
                try:
                    message = json.loads(await websocket.receive_text())
                    kind, data = message.get("type"), message.get("data") or {}
                    if kind == "reset":
                        if sid is not None:
                            await anyio.to_thread.run_sync(sessions.close, sid)
                        reply = await anyio.to_thread.run_sync(sessions.reset, data)
                        sid = reply["metadata"]["session_id"]
                    elif kind in ("step", "state", "verify") and sid is None:
                        raise HttpError(409, f"{kind} before reset: send a reset message first")
                    elif kind == "step":
                        reply = await anyio.to_thread.run_sync(sessions.step, sid, data)
                    elif kind == "verify":
                        reply = await anyio.to_thread.run_sync(sessions.verify, sid, data.get("answer"))
                    elif kind == "state":
                        reply = sessions.state(sid)
                    elif kind == "close":
                        break
                    else:
                        raise HttpError(400, f"unknown message type {kind!r}: reset, step, state, verify or close")
                    answer = "state" if kind == "state" else "observation"
                    await websocket.send_text(json.dumps({"type": answer, "data": reply}))
                except (ValueError, AttributeError):
                    error: dict[str, Any] = {
                        "message": "a message is a JSON object with a type and data",
                        "code": "INVALID_JSON",
                    }
                    await websocket.send_text(json.dumps({"type": "error", "data": error}))
                except HttpError as exc:
                    error = {"message": str(exc), "code": exc.status}
                    await websocket.send_text(json.dumps({"type": "error", "data": error}))
        except Exception:  # the client went away
            pass
        finally:
            if sid is not None:
                with contextlib.suppress(HttpError):
                    sessions.close(sid)
            with contextlib.suppress(Exception):
                await websocket.close()

    return serve


def env_app(sessions: Sessions, name: str, metadata: dict[str, Any], host: str = "127.0.0.1") -> Starlette:
    """The server as a Starlette app: the HTTP routes above and MCP at ``/sessions/{session_id}/mcp``."""
    import anyio.to_thread
    from starlette.requests import Request
    from starlette.responses import JSONResponse
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
        async def run(request: Request) -> JSONResponse:
            try:
                body = await body_of(request) if request.method == "POST" else dict(request.query_params)
                return JSONResponse(await anyio.to_thread.run_sync(handle, body, request))
            except HttpError as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)

        return run

    routes: list[BaseRoute] = [
        Route("/health", endpoint(lambda b, r: {"status": "healthy"}), methods=["GET"]),
        Route("/metadata", endpoint(lambda b, r: metadata), methods=["GET"]),
        Route("/reset", endpoint(lambda b, r: sessions.reset(b)), methods=["POST"]),
        Route("/step", endpoint(lambda b, r: sessions.step(b.get("session_id"), b.get("action"))), methods=["POST"]),
        Route(
            "/verify", endpoint(lambda b, r: sessions.verify(b.get("session_id"), b.get("answer"))), methods=["POST"]
        ),
        Route("/state", endpoint(lambda b, r: sessions.state(b.get("session_id"))), methods=["GET"]),
        Route("/close", endpoint(lambda b, r: sessions.close(b.get("session_id"))), methods=["POST"]),
    ]
    routes.append(WebSocketRoute("/ws", _websocket(sessions)))
    server = _mcp_server(sessions, name)
    return server.streamable_http_app(streamable_http_path="/sessions/{session_id}/mcp", host=host,
                                      custom_starlette_routes=routes)  # fmt: skip


__all__ = ["RESERVED_TOOL_NAMES", "HttpError", "Sessions", "env_app"]
