"""Play one episode of ``openagent env-serve`` with verifiers' own MCP client code (``verifiers`` 0.4:
``connect_mcp`` and ``call_mcp``, what its harnesses run for an ``mcpServers`` entry), scored by ``POST /verify``.

Run it in a venv of your own with verifiers (``pip install verifiers==0.4.0``; it pins ``mcp==2.0.0``), against the
server running in the project's venv:

    openagent env-serve poi --port 8000 --reward refusal-aware
    python drive.py --url http://127.0.0.1:8000 --tier perception --seed 7

``policy`` stands for your model: here it plays the ``--call``s given, then ``--answer``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from contextlib import AsyncExitStack
from typing import Any

import httpx
from verifiers.v1.harnesses.utils.mcp import call_mcp, connect_mcp


def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]], args: argparse.Namespace) -> tuple[list, str]:
    """Your model goes here: the tool calls to make (by the names verifiers gave them), then the final answer."""
    calls = [(f"{args.server}_{name}", json.loads(arguments)) for name, arguments in args.call]
    return calls, args.answer


def show(what: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    print(f"  {what}: {text[:160]}")


async def play(args: argparse.Namespace, reset: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=args.url, timeout=60) as http, AsyncExitStack() as stack:
        opened = (await http.post("/reset", json=reset)).raise_for_status().json()
        session_id, messages = opened["metadata"]["session_id"], opened["observation"]["messages"]
        show("task", messages[-1]["content"])
        config = {"mcpServers": {args.server: {"url": args.url + opened["metadata"]["mcp"]}}}
        tools, dispatch, servers = await connect_mcp(config, stack)
        show("tools", [t["function"]["name"] for t in tools])
        calls, answer = policy(messages, tools, args)
        for name, arguments in calls:
            show(name, await call_mcp(servers, dispatch, name, arguments))
        verdict = (await http.post("/verify", json={"session_id": session_id, "answer": answer})).json()
        show("verify", verdict)
        await http.post("/close", json={"session_id": session_id})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--server", default="world", help="the mcpServers entry's name, verifiers' tool prefix")
    parser.add_argument("--seed", type=int, help="a drawn train case")
    parser.add_argument("--tier", help="perception, interaction, reasoning or internalization")
    parser.add_argument("--task", help="an explicit train task id")
    parser.add_argument("--stack", action="append", help="NAME[:SEVERITY][@ONSET], repeatable")
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("TOOL", "JSON"))
    parser.add_argument("--answer", default="I cannot complete this request.")
    args = parser.parse_args()
    reset = {key: getattr(args, key) for key in ("seed", "tier", "task", "stack") if getattr(args, key) is not None}
    asyncio.run(play(args, reset))


if __name__ == "__main__":
    main()
