"""``openagent env-serve`` speaking NeMo Gym's resources-server protocol (``nemo-gym`` 0.7): ``/seed_session`` with
a dataset row or an Environment Server's typed body, the session in a cookie, tools as ``POST /NAME`` and over MCP,
``/verify`` with a Responses API response, ``/close_session``. Plain HTTP here; NeMo Gym's own models and session
conformance check ran against it from examples/nemogym_client (docs/training-at-scale.md)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import httpx

import sandbox
from pytest_openagent.commands.env_serve import app_for, write_rows
from sandbox.proxy.env_nemo_gym import COOKIE, TOKEN_HEADER, final_text
from sandbox.proxy.server import HttpThread


@pytest.fixture(scope="module")
def server():
    with HttpThread(None, app=app_for("poi", "refusal-aware")) as served:
        yield f"http://127.0.0.1:{served.port}"


def _book_task():
    return next(t for t in sandbox.tasks("poi", "train", 200, 0) if t.family == "book_named")


def _oracle(stack: tuple[str, ...] = ("semantic_renaming:2",)):
    """The book task's case under ``stack`` and the oracle's episode of it: its calls under the renamed tools."""
    from sandbox.evaluation.train_draw import train_case

    task = _book_task()
    request = {"task": task.id, "stack": list(stack)}
    episode = train_case("poi", request).run(sandbox.OracleAgent())
    return request, episode


def _response(calls: list, answer: str | None) -> dict:
    """A Responses API response as NeMo Gym's agents send it to /verify."""
    output: list[dict] = []
    for i, call in enumerate(calls):
        output.append({"type": "function_call", "call_id": f"c{i}", "name": call.name,
                       "arguments": json.dumps(call.arguments), "id": f"fc{i}", "status": "completed"})  # fmt: skip
        output.append({"type": "function_call_output", "call_id": f"c{i}", "output": "..."})
    if answer is not None:
        output.append({"id": "m", "type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": answer, "annotations": []}]})  # fmt: skip
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "policy", "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip


def test_rows_carry_the_opening_and_the_perturbed_tools_and_no_gold(tmp_path):
    path = tmp_path / "rows.jsonl"
    assert write_rows("poi", path, 3, seed=5, tier="perception") == 3
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["openagent_case"] for r in rows] == [{"seed": s, "tier": "perception"} for s in (5, 6, 7)]
    for row in rows:
        params = row["responses_create_params"]
        assert [m["role"] for m in params["input"]] == ["system", "user"]
        assert params["tools"] and all(t["type"] == "function" and t["name"] and "parameters" in t
                                       for t in params["tools"])  # fmt: skip
        assert "plan" not in json.dumps(row) and "expected" not in json.dumps(row)


def test_a_row_is_seeded_played_over_direct_http_and_verified_by_the_judge(server):
    request, episode = _oracle()
    calls = [c for step in episode.steps for c in step.calls]
    assert {c.name for c in calls}.isdisjoint({"find_place", "book_place"})  # renamed
    with httpx.Client(base_url=server, timeout=60) as client:
        row = {"responses_create_params": {"input": "book it"}, "openagent_case": request, "_ng_task_index": 4}
        seeded = client.post("/seed_session", json=row)
        assert seeded.status_code == 200 and COOKIE in seeded.cookies
        sid = seeded.cookies[COOKIE]
        assert seeded.json() == {"mcp": {"server_name": "openagent-poi", "url_path": f"/sessions/{sid}/mcp",
                                         "transport": "http", "headers": {TOKEN_HEADER: sid}}}  # fmt: skip
        for call in calls:
            observed = client.post(f"/{call.name}", json=call.arguments)
            assert observed.status_code == 200 and "error" not in observed.text[:20]
        response = _response(calls, episode.answer)
        verdict = client.post("/verify", json=row | {"response": response})
        assert verdict.status_code == 200, verdict.text
        result = verdict.json()
        assert result["reward"] == 1.0 and result["outcome"] == "success" and result["success"] is True
        assert result["response"] == response and result["_ng_task_index"] == 4 and result["tool_calls"] == 2
        # a row-seeded session closes at its verify
        again = client.post(f"/{calls[0].name}", json=calls[0].arguments)
        assert again.status_code == 404 and "no session" in again.json()["error"]


def test_a_refusal_without_any_tool_call_is_an_outcome(server):
    with httpx.Client(base_url=server, timeout=60) as client:
        row = {"responses_create_params": {"input": "x"}, "openagent_case": {"seed": 7, "tier": "perception"}}
        assert client.post("/seed_session", json=row).status_code == 200
        verdict = client.post("/verify", json=row | {"response": _response([], "I cannot do that.")}).json()
        assert verdict["outcome"] == "wrong_refusal" and verdict["reward"] == 0.0 and verdict["tool_calls"] == 0


def test_an_environment_servers_session_contract_and_mcp_access(server):
    """NeMo Gym's rules (``nemo_gym.testing.session_conformance``): a repeated seed returns the session, close is
    idempotent and succeeds for a never-seeded id, a seed after close is refused; tools over MCP at the metadata's
    url with its headers."""
    from mcp import Client

    request, episode = _oracle()
    seed = {"resources_session_id": "rs-1", "episode_id": {"rollout_id": "r1", "attempt": 0},
            "task_id": {"taskset": "poi", "task_id": "t1"}, "task_data": {"openagent_case": request}}  # fmt: skip
    with httpx.Client(base_url=server, timeout=60) as client:
        first = client.post("/seed_session", json=seed)
        assert first.status_code == 200 and first.cookies[COOKIE]
        body = first.json()
        assert body["resources_session_id"] == "rs-1" and body["sandbox_access"] is None
        tools = body["resources_tools"]
        assert client.post("/seed_session", json=seed).json() == body  # the same session
        other_episode = seed | {"episode_id": {"rollout_id": "r2", "attempt": 0}}
        assert client.post("/seed_session", json=other_episode).status_code == 409

        async def over_mcp() -> list[str]:
            async with Client(server + tools["url_path"]) as mcp:
                listed = [t.name for t in (await mcp.list_tools()).tools]
                for call in (c for step in episode.steps for c in step.calls):
                    assert not (await mcp.call_tool(call.name, call.arguments)).is_error
                return listed

        import asyncio

        assert set(asyncio.run(over_mcp())) >= {c.name for step in episode.steps for c in step.calls}
        answer = _response([], episode.answer)
        verify = seed["task_data"] | {"responses_create_params": {"input": "x"}, "response": answer}
        assert client.post("/verify", json=verify).json()["reward"] == 1.0
        close = {"resources_session_id": "rs-1", "episode_id": seed["episode_id"]}
        for _ in range(2):
            closed = client.post("/close_session", json=close)
            assert closed.status_code == 200 and closed.json() == {"resources_session_id": "rs-1"}
        never = {"resources_session_id": "rs-never", "episode_id": seed["episode_id"]}
        assert client.post("/close_session", json=never).status_code == 200
        for late in (seed, seed | {"resources_session_id": "rs-never"}):
            refused = client.post("/seed_session", json=late)
            assert refused.status_code == 409 and "was closed" in refused.json()["error"]


@contextlib.contextmanager
def _seeded_client(server: str, request: dict) -> Iterator[httpx.Client]:
    """A client with its own cookie jar, holding the cookie of a session seeded with ``request``."""
    with httpx.Client(base_url=server, timeout=60) as client:
        assert client.post("/seed_session", json={"openagent_case": request}).status_code == 200
        yield client


@pytest.mark.parametrize(
    ("path", "body", "cookie", "status", "words"),
    [
        ("/verify", {"responses_create_params": {}, "response": {"output": []}}, None, 400, "no openagent_env_session"),
        ("/verify", {"responses_create_params": {}, "response": {"output": []}}, "nosuch", 404, "no session 'nosuch'"),
        ("/find_place", {"query": "x"}, None, 400, "POST /seed_session first"),
        ("/seed_session", {"responses_create_params": {}}, None, 422, "no openagent_case"),
        ("/seed_session", {"openagent_case": {"task": "nosuch"}}, None, 400, "task"),
        ("/seed_session", {"openagent_case": {"seed": 1},
                           "responses_create_params": {"tools": [{"name": "stale"}]}}, None, 409, "another version"),
        ("/seed_session", {"resources_session_id": "x", "episode_id": {}, "task_id": {}}, None, 422, "task_data"),
        ("/close_session", {"episode_id": {}}, None, 422, "resources_session_id"),
        ("/aggregate_metrics", {"verify_responses": 3}, None, 422, "verify_responses"),
    ],
)  # fmt: skip
def test_bad_input_is_a_4xx_with_a_message(server, path, body, cookie, status, words):
    cookies = {COOKIE: cookie} if cookie else None
    answer = httpx.post(server + path, json=body, cookies=cookies, timeout=60)
    assert answer.status_code == status and words in answer.json()["error"], answer.text


def test_verify_before_any_step_and_a_malformed_response_are_refused(server):
    with _seeded_client(server, {"seed": 2}) as client:
        empty = client.post("/verify", json={"responses_create_params": {}, "response": _response([], None)})
        assert empty.status_code == 409 and "verify before any step" in empty.json()["error"]
        bad = client.post("/verify", json={"responses_create_params": {}, "response": {"output": "text"}})
        assert bad.status_code == 422 and "response.output" in bad.json()["error"]
        no_response = client.post("/verify", json={"responses_create_params": {}})
        assert no_response.status_code == 422


def test_32_concurrent_cookie_sessions_never_see_each_others_bookings(server):
    """Each session books the same place for its own party size over direct HTTP, then reads its booking back."""
    task = _book_task()
    find, book = task.plan

    def play(i: int) -> dict:
        with _seeded_client(server, {"task": task.id}) as client:
            client.post("/find_place", json=dict(find.args))
            booked = client.post("/book_place", json={**book.args, "people": i % 20 + 1}).json()
            return client.post("/get_booking", json={"booking_id": booked["booking_id"]}).json()

    with ThreadPoolExecutor(8) as pool:
        shown = list(pool.map(play, range(32)))
    assert [b["people"] for b in shown] == [i % 20 + 1 for i in range(32)]


def test_aggregate_metrics_and_reverify_mode(server):
    rows = [{"_ng_task_index": t, "reward": r, "success": r == 1.0} for t, r in ((0, 1.0), (0, 0.0), (1, 1.0))]
    metrics = httpx.post(server + "/aggregate_metrics", json={"verify_responses": rows}).json()
    assert metrics["agent_metrics"]["mean/reward"] == pytest.approx(2 / 3)
    assert [g["mean/reward"] for g in metrics["group_level_metrics"]] == [0.5, 1.0]
    assert httpx.get(server + "/reverify_mode").json() == "unsupported"


def test_final_text_is_the_assistants_text_after_the_last_tool_call():
    def said(text: str) -> dict:
        return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}

    output = [said("thinking"), {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "1"},
              {"type": "function_call_output", "call_id": "1", "output": "ok"}, {"type": "reasoning", "summary": []},
              said("Booked.")]  # fmt: skip
    assert final_text(output) == "Booked."
    assert final_text(output[:3]) == ""


def test_write_rows_refuses_an_unknown_tier_with_exit_2(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "from pytest_openagent.cli import main; main()", "env-serve", "poi",
                           "--write-rows", str(tmp_path / "rows.jsonl"), "--tier", "nosuch"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "Unknown tier 'nosuch'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_row_seed_at_the_session_limit_closes_the_oldest_row_seeded_session():
    """NeMo Gym's Agents never close a session: one whose rollout died before its verify gives its place up."""
    with HttpThread(None, app=app_for("poi", max_sessions=2)) as served:
        base = f"http://127.0.0.1:{served.port}"
        cookies = [httpx.post(base + "/seed_session", json={"openagent_case": {"seed": s}}).cookies[COOKIE]
                   for s in range(3)]  # fmt: skip
        shown = [httpx.get(f"{base}/state", params={"session_id": c}).status_code for c in cookies]
        assert shown == [404, 200, 200]
        reset = httpx.post(base + "/reset", json={"seed": 0})  # OpenEnv's sessions are never closed for it
        assert reset.status_code == 503 and "sessions are open" in reset.json()["error"]
