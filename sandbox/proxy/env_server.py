"""A domain's perturbed world as an RL environment server: OpenEnv's HTTP shape, the tools over MCP, one episode a
session (``openagent env-serve``). Here the sessions and what each route answers; the app in
``sandbox.proxy.env_app``, OpenEnv's ``/ws`` and JSON-RPC ``/mcp`` in ``sandbox.proxy.env_wire``.

Following OpenEnv's conventions (``openenv.core.env_server``, checked with ``openenv`` 0.10's own clients and its
``openenv validate``): ``POST /reset`` (a ``seed``, or an explicit case: ``task``, ``tier``, ``stack``,
``severity``) answers ``{observation, reward, done, metadata}``, the observation the opening ``messages`` and the
tools as a chat template takes them (``chat_tools``); ``POST /step`` takes an ``action`` of type ``list_tools``
(observed as OpenEnv's ``Tool``s), ``call_tool`` (``tool_name``, ``arguments``; observed as its
``CallToolObservation``) or ``answer`` (``content``: the final reply, which the judge reads); ``GET /state``,
``/health``, ``/metadata``, ``/schema``; and OpenEnv's ``/ws`` and ``POST /mcp`` (``sandbox.proxy.env_wire``).
Beside them, ``POST /verify`` answers the judge's outcome and the reward, and the episode's tools are served over MCP
(streamable HTTP) at ``/sessions/{session_id}/mcp``, where ``tools/list`` gives the case's perturbed surface and a
drift sends ``notifications/tools/list_changed``. Every HTTP request names its session (the ``session_id`` that
``/reset`` returned, where OpenEnv's HTTP routes are stateless); sessions share nothing. NeMo Gym's protocol, over
the same sessions, is in ``sandbox.proxy.env_nemo_gym``. OpenEnv and NeMo Gym reserve tool names for routes of
their own: a case offering one is refused. Misuse is an HTTP 4xx with ``{"error": message}``, never a traceback.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sandbox.errors import UsageError
from sandbox.proxy.case_session import CaseSession, EpisodeOver

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.trajectory import Episode

RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})
"""OpenEnv's reserved names (``openenv.core.env_server.mcp_types.RESERVED_TOOL_NAMES``)."""
NEMO_GYM_TOOL_NAMES = frozenset({"verify", "seed_session", "close_session", "aggregate_metrics", "mcp"})
"""NeMo Gym's (``nemo_gym.base_resources_server.RESERVED_MCP_TOOL_NAMES``): its routes, a tool being ``POST /NAME``."""

Draw = Callable[[dict[str, Any]], "Case"]
"""``draw(request)``: the case a ``/reset`` body asks for (``seed``, ``task``, ``tier``, ``stack``, ``severity``);
raises :class:`UsageError` on a request no case answers."""


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Slot:
    """One session: its episode (``None`` until the first reset), the lock its moves take, its episode id."""

    def __init__(self) -> None:
        self.case: CaseSession | None = None
        self.lock = threading.Lock()
        self.episode_id: str | None = None


def mcp_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A chat-template tool spec as OpenEnv's ``Tool`` (``name``, ``description``, ``input_schema``)."""
    function = spec.get("function", spec)
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    return {"name": function["name"], "description": function.get("description") or "", "input_schema": schema}


class Sessions:
    """The live sessions by id, each a :class:`Slot` with its own lock, at most ``limit`` at once. A session is
    made by ``/reset`` (or empty, by OpenEnv's ``openenv/session/create`` or a ``/ws`` connection, and filled by
    its first reset); a reset of an existing session replaces its episode and keeps its id."""

    def __init__(self, draw: Draw, reward: Callable[[Episode], float], limit: int = 1024) -> None:
        self.draw, self.reward, self.limit = draw, reward, limit
        self._sessions: dict[str, Slot] = {}
        self._lock = threading.Lock()

    def create(self) -> str:
        with self._lock:
            if len(self._sessions) >= self.limit:
                raise HttpError(503, f"{self.limit} sessions are open; close one (POST /close) before another reset")
            session_id = uuid.uuid4().hex
            self._sessions[session_id] = Slot()
        return session_id

    def reset(
        self, body: dict[str, Any], session_id: str | None = None, check: Callable[[CaseSession], None] | None = None
    ) -> dict[str, Any]:
        """Start the episode ``body`` asks for in session ``session_id`` (a new one by default); ``check`` may
        refuse the drawn case with an :class:`HttpError` before any session holds it."""
        body = dict(body)
        requested = body.pop("session_id", None)
        session_id = session_id or requested
        episode_id = body.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            raise HttpError(400, f"episode_id must be a string, got {type(episode_id).__name__}")
        if session_id is not None:
            self.slot(session_id)  # a 404 before a case is drawn
        try:
            case = self.draw(body)
        except UsageError as exc:
            raise HttpError(400, str(exc)) from None
        session = CaseSession(case)
        reserved = sorted((RESERVED_TOOL_NAMES | NEMO_GYM_TOOL_NAMES) & {t["function"]["name"] for t in session.tools})
        if reserved:
            raise HttpError(
                422,
                f"the case offers a tool named {', '.join(reserved)}, a name OpenEnv or NeMo Gym "
                "reserves for a route of its own",
            )
        if check is not None:
            check(session)
        session_id = session_id if session_id is not None else self.create()
        slot = self.slot(session_id)
        with slot.lock:
            slot.case, slot.episode_id = session, episode_id or session_id
        return self._answer(session_id, {"messages": session.messages, "chat_tools": session.tools})

    def slot(self, session_id: Any) -> Slot:
        if not isinstance(session_id, str) or not session_id:
            raise HttpError(400, "no session_id: give the session_id that POST /reset returned")
        with self._lock:
            found = self._sessions.get(session_id)
        if found is None:
            raise HttpError(404, f"no session {session_id!r}: it was closed, or never opened (POST /reset opens one)")
        return found

    def get(self, session_id: Any) -> tuple[CaseSession, threading.Lock, str]:
        slot = self.slot(session_id)
        if slot.case is None or slot.episode_id is None:
            raise HttpError(409, f"session {session_id!r} has no episode yet: reset it first")
        return slot.case, slot.lock, slot.episode_id

    def step(self, session_id: Any, action: Any) -> dict[str, Any]:
        session, lock, _ = self.get(session_id)
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise HttpError(400, "action must be an object with a type: list_tools, call_tool or answer")
        kind = action["type"]
        with lock:
            try:
                if kind == "list_tools":
                    tools = [mcp_spec(t) for t in session.tools]
                    return self._answer(session_id, {"tools": tools, "chat_tools": session.tools})
                if kind == "call_tool":
                    name, arguments = action.get("tool_name"), action.get("arguments", {})
                    if not isinstance(name, str) or not isinstance(arguments, dict):
                        raise HttpError(400, "call_tool needs tool_name (a string) and arguments (an object)")
                    before = session.revision
                    result = session.call(name, arguments)
                    changed = session.revision != before
                    return self._answer(session_id, {"tool_name": name, "result": result, "error": None,
                                                     "tools_changed": changed})  # fmt: skip
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
        slot = self.slot(session_id)
        session = slot.case
        if session is None:
            return {"episode_id": None, "session_id": session_id, "step_count": 0, "done": False, "tools_revision": 0}
        return {"episode_id": slot.episode_id, "session_id": session_id, "step_count": session.calls,
                "done": session.done, "tools_revision": session.revision}  # fmt: skip

    def close(self, session_id: Any) -> dict[str, Any]:
        self.slot(session_id)
        with self._lock:
            self._sessions.pop(session_id, None)
        return {"closed": session_id}

    def _answer(self, session_id: str, observation: dict[str, Any]) -> dict[str, Any]:
        session, _, episode_id = self.get(session_id)
        episode = session.episode
        reward = float(self.reward(episode)) if episode is not None else None
        metadata = {"session_id": session_id, "episode_id": episode_id, "mcp": f"/sessions/{session_id}/mcp"}
        if episode is not None:
            metadata["outcome"] = episode.outcome
        return {"observation": observation, "reward": reward, "done": episode is not None, "metadata": metadata}


__all__ = ["NEMO_GYM_TOOL_NAMES", "RESERVED_TOOL_NAMES", "HttpError", "Sessions", "Slot", "mcp_spec"]
