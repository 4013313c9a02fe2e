"""NeMo Gym's resources-server protocol for ``openagent env-serve``, as ``nemo-gym`` 0.7 defines it
(``nemo_gym.base_resources_server``) and as its agents, its environment servers and verifiers' NeMo Gym taskset
call it.

A session is named by a cookie (``COOKIE``), which ``POST /seed_session`` sets and every later request carries.
``/seed_session`` takes either body NeMo Gym sends: a dataset row (``responses_create_params`` and the row's other
fields; an Agent's ``/run``, verifiers) answered ``{"mcp": {...}}``, or an Environment Server's ``{resources_session_id,
episode_id, task_id, task_data}`` answered ``{resources_session_id, resources_tools, sandbox_access}``. Either way
the case is the row's ``openagent_case`` (a ``/reset`` body: ``seed``, ``task``, ``tier``, ``stack``, ``severity``),
and the episode's tools are served over MCP at the metadata's ``url_path`` and as ``POST /TOOL_NAME`` (the call's
arguments as the body, the observation as the answer). ``POST /verify`` takes the row with the policy's Responses
API ``response``: its last assistant message is the final answer the judge reads, and the answer is the body with
``reward`` and the judge's outcome. ``POST /close_session`` is idempotent and a closed ``resources_session_id`` is
never seeded again; a row-seeded session closes at its verify. Misuse is an HTTP 4xx with ``{"error": message}``.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from sandbox.budget import user_turns
from sandbox.errors import UsageError
from sandbox.proxy.case_session import CaseSession, EpisodeOver
from sandbox.proxy.env_server import NEMO_GYM_TOOL_NAMES, RESERVED_TOOL_NAMES, Draw, HttpError, Sessions

COOKIE = "openagent_env_session"
TOKEN_HEADER = "X-NeMo-Gym-Session-Token"
"""What NeMo Gym's MCP clients send with each call (``NEMO_GYM_MCP_SESSION_TOKEN_HEADER``); the url is ours."""
CASE_KEY = "openagent_case"
_TYPED_KEYS = {"resources_session_id", "episode_id", "task_id", "task_data"}


def responses_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """A chat-template tool spec as a Responses API function tool (what a row's ``responses_create_params`` lists)."""
    function = spec.get("function", spec)
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    return {"type": "function", "name": function["name"], "description": function.get("description") or "",
            "parameters": schema, "strict": False}  # fmt: skip


def final_text(output: list[Any]) -> str:
    """The policy's final answer in a Responses API ``output``: its assistant messages after the last tool call."""
    last_call = max((i for i, item in enumerate(output) if isinstance(item, dict) and str(item.get("type", ""))
                     .endswith(("function_call", "function_call_output"))), default=-1)  # fmt: skip
    texts = []
    for item in output[last_call + 1 :]:
        if not isinstance(item, dict) or item.get("type", "message") != "message" or item.get("role") != "assistant":
            continue
        content = item.get("content")
        parts = [{"text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
        texts += [str(p.get("text") or p.get("refusal") or "") for p in parts if isinstance(p, dict)]
    return "\n".join(t for t in texts if t)


def _single_turn(session: CaseSession) -> None:
    turns = user_turns(session.case.task)
    if turns is not None and len(set(turns)) > 1:
        raise HttpError(422, f"task {session.case.task.id} has several user turns, which NeMo Gym's one verify per "
                             "rollout cannot play: seed a task of one request")  # fmt: skip


class NemoGym:
    """NeMo Gym's routes over ``sessions``; ``name`` is the server's name in the MCP metadata."""

    def __init__(self, sessions: Sessions, name: str) -> None:
        self.sessions, self.name = sessions, name
        self._typed: dict[str, tuple[str, Any]] = {}  # resources_session_id -> (session id, episode_id)
        self._closed: set[str] = set()
        self._by_row: dict[str, None] = {}  # row-seeded sessions still open, oldest first
        self._lock = threading.Lock()

    def mcp(self, session_id: str) -> dict[str, Any]:
        """``MCPServerMetadata``: where the session's tools are served over MCP."""
        return {"server_name": self.name, "url_path": f"/sessions/{session_id}/mcp", "transport": "http",
                "headers": {TOKEN_HEADER: session_id}}  # fmt: skip

    def seed(self, body: dict[str, Any], cookie: str | None) -> tuple[dict[str, Any], str]:
        """``POST /seed_session``: the answer and the session id its cookie carries."""
        if "resources_session_id" in body:
            return self._seed_typed(body)
        open_session = cookie if cookie and self._is_open(cookie) else None
        try:
            session_id = self._start(body, open_session)
        except HttpError as exc:
            if exc.status != 503 or not self._close_oldest_row():
                raise
            session_id = self._start(body, open_session)
        with self._lock:
            self._by_row[session_id] = None
        return {"mcp": self.mcp(session_id)}, session_id

    def _close_oldest_row(self) -> bool:
        """Close the oldest row-seeded session (NeMo Gym's Agents close none: one whose rollout failed before its
        verify would hold its place for good); whether there was one."""
        with self._lock:
            oldest = next(iter(self._by_row), None)
            if oldest is not None:
                del self._by_row[oldest]
        if oldest is not None and self._is_open(oldest):
            self.sessions.close(oldest)
        return oldest is not None

    def _seed_typed(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        extra = sorted(set(body) - _TYPED_KEYS)
        missing = sorted(_TYPED_KEYS - set(body))
        if extra or missing:
            raise HttpError(422, f"an Environment Server's seed has exactly {', '.join(sorted(_TYPED_KEYS))}; unknown:"
                                 f" {', '.join(extra) or 'none'}, missing: {', '.join(missing) or 'none'}")  # fmt: skip
        rid, episode, task_data = body["resources_session_id"], body["episode_id"], body["task_data"]
        if not isinstance(rid, str) or not rid:
            raise HttpError(422, f"resources_session_id must be a non-empty string, got {rid!r}")
        if not isinstance(task_data, dict):
            raise HttpError(422, f"task_data must be an object (the row's fields), got {type(task_data).__name__}")
        known = self._known(rid, episode)
        if known is None:
            session_id = self._start(task_data, None)
            with self._lock:
                if rid in self._closed or rid in self._typed:  # a racing seed or close won
                    self.sessions.close(session_id)
                else:
                    self._typed[rid] = (session_id, episode)
            known = self._known(rid, episode)
        assert known is not None
        answer = {"resources_session_id": rid, "resources_tools": self.mcp(known), "sandbox_access": None}
        return answer, known

    def _known(self, rid: str, episode: Any) -> str | None:
        with self._lock:
            if rid in self._closed:
                raise HttpError(409, f"resources session {rid!r} was closed; seed a new resources_session_id")
            found = self._typed.get(rid)
        if found is not None and found[1] != episode:
            raise HttpError(409, f"resources session {rid!r} was seeded for episode {found[1]!r}, not {episode!r}")
        return found[0] if found is not None else None

    def _start(self, row: dict[str, Any], session_id: str | None) -> str:
        request = row.get(CASE_KEY)
        if not isinstance(request, dict):
            raise HttpError(422, f"the row has no {CASE_KEY} object (a /reset body: seed, task, tier, stack, "
                                 "severity); write rows with openagent env-serve DOMAIN --write-rows FILE")  # fmt: skip
        params = row.get("responses_create_params")
        listed = params.get("tools") if isinstance(params, dict) else None

        def check(session: CaseSession) -> None:
            _single_turn(session)
            names = sorted(str(t.get("name")) for t in listed or () if isinstance(t, dict))
            offered = sorted(t["function"]["name"] for t in session.tools)
            if listed and names != offered:
                raise HttpError(409, f"the row's tools ({', '.join(names)}) are not its case's ({', '.join(offered)}):"
                                     " the row was written by another version; write the rows again")  # fmt: skip

        answer = self.sessions.reset(request, session_id, check=check)
        return str(answer["metadata"]["session_id"])

    def _is_open(self, session_id: str) -> bool:
        try:
            self.sessions.slot(session_id)
        except HttpError:
            return False
        return True

    def _session(self, cookie: str | None) -> tuple[str, CaseSession, threading.Lock]:
        if not cookie:
            raise HttpError(400, f"no {COOKIE} cookie: POST /seed_session first and send the cookie it sets")
        session, lock, _ = self.sessions.get(cookie)
        return cookie, session, lock

    def tool(self, name: str, arguments: dict[str, Any], cookie: str | None) -> str:
        """``POST /NAME``: the observation of calling the session's tool ``name`` (an error observation where the
        call fails, as the episode records it)."""
        _, session, lock = self._session(cookie)
        with lock:
            try:
                return session.call(name, arguments)
            except EpisodeOver as exc:
                raise HttpError(409, str(exc)) from None

    def verify(self, body: dict[str, Any], cookie: str | None) -> dict[str, Any]:
        """``POST /verify``: the row and the policy's ``response`` back, with ``reward`` and the judge's outcome."""
        session_id, session, lock = self._session(cookie)
        response = body.get("response")
        if "responses_create_params" not in body or not isinstance(response, dict):
            raise HttpError(422, "verify takes the row (with responses_create_params) and the policy's response")
        output = response.get("output")
        if not isinstance(output, list):
            raise HttpError(422, "response.output must be a list: a Responses API response")
        with lock:
            if session.episode is None:
                if not session.calls and not output:
                    raise HttpError(409, "verify before any step: the response has no output and no tool was called")
                if session.answer(final_text(output)) is None:
                    raise HttpError(409, "the task has another user turn, which a NeMo Gym verify cannot play")
            episode, calls = session.episode, session.calls
        assert episode is not None
        with self._lock:
            by_row = session_id in self._by_row
            if by_row:
                del self._by_row[session_id]
        if by_row:
            self.sessions.close(session_id)
        return {**body, "reward": float(self.sessions.reward(episode)), "outcome": episode.outcome,
                "success": episode.success, "ending": episode.ending, "solvable": episode.solvable,
                "tool_calls": calls, "mask_sample": False}  # fmt: skip

    def close(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /close_session``: idempotent; the id is never seeded again."""
        rid = body.get("resources_session_id")
        if not isinstance(rid, str) or not rid or set(body) - {"resources_session_id", "episode_id"}:
            raise HttpError(422, "close_session takes {resources_session_id, episode_id}")
        with self._lock:
            self._closed.add(rid)
            found = self._typed.pop(rid, None)
        if found is not None and self._is_open(found[0]):
            self.sessions.close(found[0])
        return {"resources_session_id": rid}


def dataset_rows(draw: Draw, count: int, seed: int = 0, tier: str | None = None) -> list[dict[str, Any]]:
    """``count`` dataset rows of the cases ``/reset`` bodies ``{"seed": seed + i, "tier": tier}`` draw, leaving out
    a case of several user turns, one that does not start, or one offering a reserved tool name: each row the
    opening messages and the perturbed tools as ``responses_create_params``, and its ``openagent_case``."""
    rows: list[dict[str, Any]] = []
    for i in itertools.count(seed):
        if len(rows) == count:
            return rows
        if i - seed >= 4 * count + 16:
            raise UsageError(f"only {len(rows)} of {i - seed} cases drawn could be rows; {count} were asked for")
        request: dict[str, Any] = {"seed": i} | ({"tier": tier} if tier else {})
        session = CaseSession(draw(request))
        names = {t["function"]["name"] for t in session.tools}
        if session.done or names & (RESERVED_TOOL_NAMES | NEMO_GYM_TOOL_NAMES):
            continue
        try:
            _single_turn(session)
        except HttpError:
            continue
        opening = [{"role": m["role"], "content": m["content"]} for m in session.opening]
        params = {"input": opening, "tools": [responses_tool(t) for t in session.tools]}
        rows.append({"responses_create_params": params, CASE_KEY: request})
    raise AssertionError("unreachable")


def aggregate_metrics(body: dict[str, Any]) -> dict[str, Any]:
    """``POST /aggregate_metrics``: mean reward and success over the verify responses, overall and per task
    (``_ng_task_index``), in NeMo Gym's ``AggregateMetrics`` shape."""
    rows = body.get("verify_responses")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise HttpError(422, "aggregate_metrics takes {verify_responses: [verify answers]}")

    def means(group: list[dict[str, Any]]) -> dict[str, Any]:
        scored = [r for r in group if not r.get("mask_sample")]
        out: dict[str, Any] = {"num_rollouts": len(group), "num_masked": len(group) - len(scored)}
        for key in ("reward", "success"):
            values = [float(r[key]) for r in scored if isinstance(r.get(key), (int, float))]
            if values:
                out[f"mean/{key}"] = sum(values) / len(values)
        return out

    if not rows:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    tasks: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        tasks.setdefault(row.get("_ng_task_index"), []).append(row)
    overall = means(rows)
    key = {k: v for k, v in overall.items() if k.startswith("mean/")}
    groups = [{"_ng_task_index": task, **means(group)} for task, group in tasks.items()]
    return {"group_level_metrics": groups, "agent_metrics": overall, "key_metrics": key}


__all__ = ["CASE_KEY", "COOKIE", "TOKEN_HEADER", "NemoGym", "aggregate_metrics", "dataset_rows", "final_text",
           "responses_tool"]  # fmt: skip
