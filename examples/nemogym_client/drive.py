"""Play a row of ``openagent env-serve`` with NeMo Gym's own code (``nemo-gym`` 0.7.0): its ``SimpleAgent`` (an
Agent's ``/run``: seed with the row, tools over direct HTTP with the session cookie, ``/verify``), its
``SingleAgentTurn`` Environment Server (typed ``/seed_session``, an agent session with direct HTTP tool access,
``/verify``, ``/close_session``) and its session-contract check (``nemo_gym.testing.session_conformance``).

Run it in a venv of your own with nemo-gym (it asks for Python 3.13.14+; 3.13.0 here took it with
``pip install --ignore-requires-python nemo-gym==0.7.0``), against the server in the project's venv:

    openagent env-serve poi --port 8000 --reward refusal-aware
    openagent env-serve poi --write-rows rows.jsonl --rows 8 --tier perception
    python drive.py --url http://127.0.0.1:8000 --rows rows.jsonl --index 2 \\
        --call NAME JSON ... --answer TEXT

``policy`` stands for your model, served as NeMo Gym's model servers serve one (``POST /v1/responses``): here it
plays the ``--call``s given, one a turn, then ``--answer``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
import uuid
from typing import Any
from unittest import mock

import httpx
import uvicorn
from environment_servers.single_agent_turn.app import (
    SingleAgentTurnEnvironmentServer,
    SingleAgentTurnEnvironmentServerConfig,
)
from fastapi import FastAPI, Request
from nemo_gym.base_resources_server import ResourcesSeedSessionRequest
from nemo_gym.config_types import AgentServerRef, BaseServerConfig, ModelServerRef, ResourcesServerRef
from nemo_gym.episode_types import EpisodeId, TaskId
from nemo_gym.server_utils import GlobalAIOHTTPAsyncClientConfig, ServerClient, set_global_aiohttp_client
from nemo_gym.single_agent_turn_types import SingleAgentTurnRequest
from nemo_gym.testing.session_conformance import check_resources_session_contract
from omegaconf import OmegaConf
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig, SimpleAgentVerifyResponse

HOST = "127.0.0.1"


def policy(body: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Your model goes here: the next output items for a Responses API request (one tool call a turn, then the
    answer)."""
    items = body.get("input", [])
    done = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output")
    if done < len(args.call):
        name, arguments = args.call[done]
        return [{"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}", "name": name,
                 "arguments": arguments, "status": "completed"}]  # fmt: skip
    return [{"type": "message", "id": "msg_final", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": args.answer, "annotations": []}]}]  # fmt: skip


def model_app(args: argparse.Namespace) -> FastAPI:
    app = FastAPI()

    @app.post("/{path:path}")
    async def responses(path: str, request: Request) -> dict[str, Any]:
        body = await request.json()
        return {"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": time.time(), "model": "policy",
                "output": policy(body, args), "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": body.get("tools", []), "status": "completed"}  # fmt: skip

    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def show(what: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    print(f"  {what}: {text[:200]}")


def show_rollout(result: dict[str, Any]) -> None:
    for item in result["response"]["output"]:
        if item["type"] == "function_call":
            show(f"call {item['name']}", item["arguments"])
        elif item["type"] == "function_call_output":
            show("  observed", item["output"])
        elif item["type"] == "message":
            show("answer", item["content"][0]["text"])
    show("verify", {k: result.get(k) for k in ("reward", "outcome", "success", "tool_calls", "mask_sample")})


async def serve(app: Any, port: int) -> tuple[uvicorn.Server, asyncio.Task]:
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning"))
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    return server, task


async def play(args: argparse.Namespace, row: dict[str, Any]) -> None:
    set_global_aiohttp_client(GlobalAIOHTTPAsyncClientConfig())
    url = httpx.URL(args.url)
    model_port, agent_port = free_port(), free_port()
    config = OmegaConf.create({
        "policy_model": {"responses_api_models": {"policy": {"host": HOST, "port": model_port}}},
        "openagent": {"resources_servers": {"openagent": {"host": url.host, "port": url.port}}},
        "simple_agent": {"responses_api_agents": {"simple_agent": {"host": HOST, "port": agent_port}}},
    })  # fmt: skip
    client = ServerClient(head_server_config=BaseServerConfig(host=HOST, port=11000), global_config_dict=config)
    resources = ResourcesServerRef(type="resources_servers", name="openagent")
    agent = SimpleAgent(config=SimpleAgentConfig(host=HOST, port=agent_port, entrypoint="app.py", name="simple_agent",
                                                 model_server=ModelServerRef(type="responses_api_models",
                                                                             name="policy_model"),
                                                 resources_server=resources), server_client=client)  # fmt: skip
    servers = [await serve(model_app(args), model_port), await serve(agent.setup_webserver(), agent_port)]
    try:
        print("SimpleAgent /run (an Agent's rollout: the row seeds the session, tools over direct HTTP):")
        async with httpx.AsyncClient(timeout=120) as http:
            ran = (await http.post(f"http://{HOST}:{agent_port}/run", json=row)).raise_for_status().json()
        show_rollout(SimpleAgentVerifyResponse.model_validate(ran).model_dump(mode="json"))

        print("SingleAgentTurn Environment Server (typed seed, agent session, verify, close):")
        environment = SingleAgentTurnEnvironmentServer(
            config=SingleAgentTurnEnvironmentServerConfig(host=HOST, port=free_port(), entrypoint="app.py",
                                                          name="environment", resources_server=resources,
                                                          agent_server=AgentServerRef(type="responses_api_agents",
                                                                                      name="simple_agent"),
                                                          resources_tool_transports=["direct_http"],
                                                          default_episode_timeout_seconds=600,
                                                          cleanup_timeout_seconds=60),
            server_client=client,
        )  # fmt: skip
        request = SingleAgentTurnRequest.model_validate({
            "episode_id": {"rollout_id": f"r{uuid.uuid4().hex[:8]}"},
            "task": {"task_id": {"taskset": "openagent", "task_id": f"row-{args.index}"}, "task_input": row},
        })  # fmt: skip
        turn = await environment.run_request(request)
        if turn.failure is not None:
            show("failure", turn.failure.model_dump(mode="json"))
        else:
            show_rollout(turn.result.model_dump(mode="json"))
    finally:
        for server, _ in servers:
            server.should_exit = True
        await asyncio.gather(*(task for _, task in servers))


def contract(args: argparse.Namespace, row: dict[str, Any]) -> None:
    """NeMo Gym's own session-contract check, its in-process client swapped for one to the running server."""
    task_data = {k: v for k, v in row.items() if k != "responses_create_params"}
    seed = ResourcesSeedSessionRequest(resources_session_id=f"rs-{uuid.uuid4().hex}",
                                       episode_id=EpisodeId(rollout_id="contract"),
                                       task_id=TaskId(taskset="openagent", task_id=f"row-{args.index}"),
                                       task_data=task_data)  # fmt: skip
    with mock.patch("fastapi.testclient.TestClient", lambda app, **kw: httpx.Client(base_url=args.url, timeout=60)):
        check_resources_session_contract(None, seed, keeps_state=True)  # type: ignore[arg-type]
    print("check_resources_session_contract(keeps_state=True): passed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--rows", required=True, help="rows written by openagent env-serve DOMAIN --write-rows")
    parser.add_argument("--index", type=int, default=0, help="which row to play (default 0)")
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("TOOL", "JSON"))
    parser.add_argument("--answer", default="I cannot complete this request.")
    args = parser.parse_args()
    with open(args.rows, encoding="utf-8") as lines:
        row = [json.loads(line) for line in lines if line.strip()][args.index]
    show("task", row["responses_create_params"]["input"][-1]["content"])
    show("tools", [t["name"] for t in row["responses_create_params"]["tools"]])
    asyncio.run(play(args, row))
    contract(args, row)


if __name__ == "__main__":
    main()
