"""``openagent env-serve``: OpenEnv's reset/step/state over HTTP, verify with the judge's outcome, the tools over MCP,
sessions isolated. Driven with the MCP SDK's client, plain HTTP and websockets: OpenEnv's own clients (``openenv``
0.10) do not install beside the project's ``mcp``, so the wire details they read are checked here one by one
(examples/openenv_client/drive.py runs them; docs/training-at-scale.md has what they did)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import sandbox
from pytest_openagent.commands.env_serve import app_for
from sandbox.proxy.server import HttpThread


@pytest.fixture(scope="module")
def server():
    with HttpThread(None, app=app_for("poi", "refusal-aware")) as served:
        yield f"http://127.0.0.1:{served.port}"


def _post(base: str, path: str, body: object | None = None, method: str = "POST") -> tuple[int, dict]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _book_task():
    return next(t for t in sandbox.tasks("poi", "train", 200, 0) if t.family == "book_named")


def test_a_seeded_reset_shows_the_opening_and_the_tools_and_no_gold(server):
    status, reset = _post(server, "/reset", {"seed": 3})
    assert status == 200 and reset["done"] is False and reset["reward"] is None
    observation = reset["observation"]
    assert [m["role"] for m in observation["messages"]] == ["system", "user"] and observation["chat_tools"]
    # no "tools" key: OpenEnv's MCPToolClient reads an observation with one as a tool list and drops the messages
    assert set(observation) == {"messages", "chat_tools"}
    assert "train" not in json.dumps(observation) and "plan" not in json.dumps(observation)
    again = _post(server, "/reset", {"seed": 3})[1]["observation"]
    assert again == observation  # the seed decides the case


def test_an_explicit_case_is_played_step_by_step_and_verified_by_the_judge(server):
    task = _book_task()
    _, reset = _post(server, "/reset", {"task": task.id, "stack": ["semantic_renaming:2"]})
    sid = reset["metadata"]["session_id"]
    names = {t["function"]["name"] for t in reset["observation"]["chat_tools"]}
    assert "find_place" not in names and "book_place" not in names
    # the gold calls under the renamed tools, as the oracle plays the same case
    from sandbox.case import Case
    from sandbox.perturbations import get

    case = Case(task, (get("semantic_renaming")(severity=2, pool="train", seed=0),))
    episode = case.run(sandbox.OracleAgent())
    for call in (c for step in episode.steps for c in step.calls):
        action = {"type": "call_tool", "tool_name": call.name, "arguments": call.arguments}
        status, stepped = _post(server, "/step", {"session_id": sid, "action": action})
        assert status == 200 and not stepped["done"] and "error" not in stepped["observation"]["result"][:20]
    assert _post(server, "/state?session_id=" + sid, method="GET")[1]["step_count"] == 2
    status, verdict = _post(server, "/verify", {"session_id": sid, "answer": episode.answer})
    assert status == 200 and verdict["outcome"] == "success" and verdict["reward"] == 1.0
    status, again = _post(server, "/step", {"session_id": sid, "action": {"type": "answer", "content": "x"}})
    assert status == 409 and "has ended" in again["error"]


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/reset", {"tier": "perceptoin"}, 400, "perceptoin"),
        ("/reset", {"task": "no-such-task"}, 400, "no-such-task"),
        ("/reset", {"stack": ["no_such_perturbation"]}, 400, "no_such_perturbation"),
        ("/reset", {"seed": -1}, 400, "seed must be"),
        ("/reset", {"sede": 1}, 400, "unknown reset field sede"),
        ("/reset", b"{not json", 400, "not JSON"),
        ("/step", {"session_id": "nope", "action": {"type": "list_tools"}}, 404, "no session 'nope'"),
        ("/verify", {"session_id": "nope"}, 404, "no session"),
        ("/verify", {}, 400, "no session_id"),
        ("/reset", {"session_id": "nope", "seed": 1}, 404, "no session 'nope'"),
    ],
)  # fmt: skip
def test_bad_input_is_a_4xx_with_a_message(server, path, body, status, words):
    got, answer = _post(server, path, body)
    assert got == status and words in answer["error"]


def test_a_test_split_task_is_refused_and_verify_before_any_step_is_a_conflict(server):
    test_task = sandbox.tasks("poi", "test", 1, 0)[0]
    status, answer = _post(server, "/reset", {"task": test_task.id})
    assert status == 400 and "train split" in answer["error"]
    sid = _post(server, "/reset", {"seed": 1})[1]["metadata"]["session_id"]
    status, answer = _post(server, "/verify", {"session_id": sid})
    assert status == 409 and "before any step" in answer["error"]
    status, answer = _post(server, "/step", {"session_id": sid, "action": {"type": "jump"}})
    assert status == 400 and "unknown action type 'jump'" in answer["error"]


def test_32_concurrent_sessions_over_mcp_never_see_each_others_bookings(server):
    """Each session books the same place for its own party size over MCP, then reads its booking back: it finds its
    own, whatever the 31 others did meanwhile."""
    from mcp import Client

    task = _book_task()
    find, book = task.plan
    sessions = []
    for _ in range(32):
        sessions.append(_post(server, "/reset", {"task": task.id})[1]["metadata"]["session_id"])

    async def play(i: int, sid: str) -> dict:
        async with Client(f"{server}/sessions/{sid}/mcp") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {"find_place", "book_place"} <= listed
            await client.call_tool("find_place", dict(find.args))
            booked = json.loads(
                (await client.call_tool("book_place", {**book.args, "people": i % 20 + 1})).content[0].text
            )
            await asyncio.sleep(0.01)  # let the other sessions write meanwhile
            shown = await client.call_tool("get_booking", {"booking_id": booked["booking_id"]})
            return json.loads(shown.content[0].text)

    async def all_of_them() -> list[dict]:
        return await asyncio.gather(*(play(i, sid) for i, sid in enumerate(sessions)))

    shown = asyncio.run(all_of_them())
    assert [b["people"] for b in shown] == [i % 20 + 1 for i in range(32)]
    with ThreadPoolExecutor(8) as pool:
        states = list(pool.map(lambda sid: _post(server, f"/state?session_id={sid}", method="GET")[1], sessions))
    assert [s["step_count"] for s in states] == [3] * 32


def test_the_cli_refuses_an_unknown_domain_with_exit_2():
    done = subprocess.run([sys.executable, "-c", "from pytest_openagent.cli import main; main()", "env-serve",
                           "nosuch"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "Unknown domain 'nosuch'" in done.stderr and "Traceback" not in done.stderr


def test_openenvs_websocket_protocol_one_session_a_connection(server):
    """OpenEnv's ``/ws`` wire format (what its EnvClient sends), driven with the websockets client."""
    from websockets.sync.client import connect

    def send(ws, message: dict) -> dict:
        ws.send(json.dumps(message))
        return json.loads(ws.recv())

    task = _book_task()
    with connect(server.replace("http", "ws") + "/ws") as ws:
        assert send(ws, {"type": "step", "data": {"type": "list_tools"}})["type"] == "error"
        reset = send(ws, {"type": "reset", "data": {"task": task.id}})
        assert reset["type"] == "observation" and reset["data"]["done"] is False
        find = task.plan[0]
        call = {"type": "call_tool", "tool_name": find.tool, "arguments": dict(find.args)}
        stepped = send(ws, {"type": "step", "data": call})
        assert stepped["type"] == "observation" and "P" in stepped["data"]["observation"]["result"]
        assert send(ws, {"type": "state"})["data"]["step_count"] == 1
        verdict = send(ws, {"type": "verify", "data": {"answer": "I cannot do that."}})
        assert verdict["data"]["outcome"] == "wrong_refusal" and verdict["data"]["reward"] == 0.0
        jump = send(ws, {"type": "jump"})["data"]
        assert jump["message"].startswith("unknown message type 'jump'") and jump["code"] == "UNKNOWN_TYPE"
        sid = reset["data"]["metadata"]["session_id"]
    status, _ = _post(server, f"/state?session_id={sid}", method="GET")
    assert status == 404  # the connection's session went with it


def test_every_case_the_server_draws_is_a_train_task_with_train_pool_perturbations():
    """The pools stay disjoint on this path too: what a reset draws, by seed or by tier, is never the gate's."""
    from sandbox.evaluation.train_draw import train_case

    drawn = [train_case("poi", {"seed": s}) for s in range(12)]
    drawn += [train_case("medical", {"seed": s, "tier": t}) for s in range(3) for t in ("perception", "reasoning")]
    assert all(c.task.split == "train" for c in drawn)
    assert all(p.pool == "train" for c in drawn for p in c.perturbations) and any(c.perturbations for c in drawn)


def _rpc(base: str, method: str, params: dict | None = None) -> dict:
    status, answer = _post(base, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
    assert status == 200 and answer["jsonrpc"] == "2.0" and answer["id"] == 1
    return answer


def test_step_observations_in_openenvs_shapes(server):
    """What OpenEnv's clients parse: a list_tools observation as its ``Tool``s, a call_tool one as its
    ``CallToolObservation`` (``tool_name``, ``result``, ``error``)."""
    task = _book_task()
    sid = _post(server, "/reset", {"task": task.id})[1]["metadata"]["session_id"]
    listed = _post(server, "/step", {"session_id": sid, "action": {"type": "list_tools"}})[1]["observation"]
    assert all(set(t) == {"name", "description", "input_schema"} for t in listed["tools"])
    assert {"find_place", "book_place"} <= {t["name"] for t in listed["tools"]}
    assert [t["function"]["name"] for t in listed["chat_tools"]] == [t["name"] for t in listed["tools"]]
    find = task.plan[0]
    action = {"type": "call_tool", "tool_name": find.tool, "arguments": dict(find.args), "metadata": {}}
    called = _post(server, "/step", {"session_id": sid, "action": action})[1]["observation"]
    assert called["tool_name"] == find.tool and called["error"] is None and called["tools_changed"] is False
    assert json.loads(called["result"])["name"] == find.args["name"]


def test_openenvs_mcp_tool_client_sequence(server):
    """MCPToolClient's wire sequence: ``openenv/session/create`` on ``POST /mcp``, ``/ws?session_id=`` attached to it
    for reset and step, ``tools/list`` and ``tools/call`` on ``POST /mcp`` with the session's id, the answer as an
    ``Action``'s dump (with its ``metadata``), then ``openenv/session/close``."""
    from websockets.sync.client import connect

    def send(ws, message: dict) -> dict:
        ws.send(json.dumps(message))
        return json.loads(ws.recv())

    task = _book_task()
    find = task.plan[0]
    sid = _rpc(server, "openenv/session/create")["result"]["session_id"]
    assert "reset it first" in _rpc(server, "tools/list", {"session_id": sid})["error"]["message"]
    url = server.replace("http", "ws") + f"/ws?session_id={sid}"
    with connect(url) as ws:
        reset = send(ws, {"type": "reset", "data": {"task": task.id, "session_id": "not-this-one"}})
        assert reset["type"] == "observation" and reset["data"]["metadata"]["session_id"] == sid
        tools = _rpc(server, "tools/list", {"session_id": sid})["result"]["tools"]
        assert find.tool in {t["name"] for t in tools} and all(t["inputSchema"]["type"] == "object" for t in tools)
        called = _rpc(server, "tools/call", {"session_id": sid, "name": find.tool, "arguments": dict(find.args)})
        assert called["result"]["is_error"] is False
        assert json.loads(called["result"]["data"])["name"] == find.args["name"]
        over_ws = send(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}})
        assert over_ws["type"] == "mcp" and over_ws["data"]["id"] == 7 and over_ws["data"]["result"]["tools"] == tools
        with connect(url) as other:
            refused = json.loads(other.recv())
            assert refused["type"] == "error" and "already has a /ws connection" in refused["data"]["message"]
        assert send(ws, {"type": "state"})["data"]["step_count"] == 1
        ended = send(ws, {"type": "step", "data": {"metadata": {}, "type": "answer", "content": "I cannot do that."}})
        assert ended["data"]["done"] is True and ended["data"]["metadata"]["outcome"] == "wrong_refusal"
        assert ended["data"]["reward"] == 0.0
    assert _post(server, f"/state?session_id={sid}", method="GET")[0] == 200  # attached: it outlives the connection
    again = _post(server, "/reset", {"session_id": sid, "seed": 1})[1]  # a reset of an open session keeps its id
    assert again["metadata"]["session_id"] == sid and again["done"] is False
    assert _rpc(server, "openenv/session/close", {"session_id": sid})["result"] == {"session_id": sid, "closed": True}
    assert _post(server, f"/state?session_id={sid}", method="GET")[0] == 404


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({}, -32600, "a JSON-RPC request is an object with a method"),
        (b"{not json", -32700, "Parse error"),
        ({"method": "initialize", "params": {}}, -32601, "Method not found: initialize"),
        ({"method": "tools/list", "params": {}}, -32602, "no session_id"),
        ({"method": "tools/call", "params": {"session_id": "nope", "name": "x"}}, -32602, "no session 'nope'"),
        ({"method": "openenv/session/close", "params": {"session_id": "nope"}}, -32602, "no session 'nope'"),
        ({"method": "tools/list", "params": []}, -32602, "params must be an object"),
    ],
)  # fmt: skip
def test_openenvs_mcp_endpoint_answers_json_rpc_errors_with_200(server, body, code, words):
    if isinstance(body, dict) and body:
        body = {"jsonrpc": "2.0", **body}
    status, answer = _post(server, "/mcp", body)
    assert status == 200 and answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code
    assert words in answer["error"]["message"] and "result" not in answer


def test_what_openenv_validate_reads(server):
    """``openenv validate URL``'s criteria: OpenAPI's version (1.x) and a simulation server's paths, health, the
    metadata's name and description, the action/observation/state schemas, a JSON-RPC ``/mcp``."""
    openapi = _post(server, "/openapi.json", method="GET")[1]
    assert openapi["info"]["version"].startswith("1.") and {"/reset", "/step", "/state"} <= set(openapi["paths"])
    assert _post(server, "/health", method="GET")[1] == {"status": "healthy"}
    metadata = _post(server, "/metadata", method="GET")[1]
    assert isinstance(metadata["name"], str) and isinstance(metadata["description"], str)
    schema = _post(server, "/schema", method="GET")[1]
    assert all(isinstance(schema[k], dict) for k in ("action", "observation", "reset_observation", "state"))
    kinds = {option["properties"]["type"]["const"] for option in schema["action"]["oneOf"]}
    assert kinds == {"list_tools", "call_tool", "answer"}
