"""Play one episode of ``openagent env-serve`` with OpenEnv's own clients, twice: ``GenericEnvClient`` (everything
over ``/ws``) and ``MCPToolClient`` (tools over OpenEnv's ``POST /mcp``, reset and answer over ``/ws``).

Run it in a venv of your own with OpenEnv's client (``pip install openenv==0.10.0``), against the server running in
the project's venv:

    openagent env-serve poi --port 8000 --reward refusal-aware
    python drive.py --url http://127.0.0.1:8000 --tier perception --seed 7
    python drive.py --task poi-train-book_named-f6b2ea49 --stack semantic_renaming:2 \\
        --call locate_spot '{"name": "Little Tower Spa", "city": "Marseille"}' --answer "..."

``policy`` stands for your model: here it plays the ``--call``s given, then ``--answer``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Literal

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.env_server.types import Action
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient


class Answer(Action):
    """The episode's final reply, which the server's judge reads (its ``answer`` action)."""

    type: Literal["answer"] = "answer"
    content: str


def policy(messages: list[dict[str, Any]], tools: list[str], args: argparse.Namespace) -> tuple[list, str]:
    """Your model goes here: the tool calls to make, then the final answer."""
    calls = [(name, json.loads(arguments)) for name, arguments in args.call]
    return calls, args.answer


def call(env: Any, name: str, arguments: dict[str, Any]) -> Any:
    """A tool call through MCPToolClient: ``call_tool`` (``tools/call`` over ``POST /mcp``), or a ``CallToolAction``
    step over ``/ws`` where an argument is called ``name``, which ``call_tool(name, **arguments)`` cannot pass."""
    if "name" in arguments:
        return env.step(CallToolAction(tool_name=name, arguments=arguments)).observation.result
    return env.call_tool(name, **arguments)


def show(what: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    print(f"  {what}: {text[:160]}")


def with_generic_client(url: str, reset: dict[str, Any], args: argparse.Namespace) -> None:
    print("GenericEnvClient (/ws)")
    with GenericEnvClient(base_url=url).sync() as env:
        opened = env.reset(**reset)
        messages = opened.observation["messages"]
        show("task", messages[-1]["content"])
        tools = [t["name"] for t in env.step({"type": "list_tools"}).observation["tools"]]
        show("tools", tools)
        calls, answer = policy(messages, tools, args)
        for name, arguments in calls:
            show(name, env.step({"type": "call_tool", "tool_name": name, "arguments": arguments}).observation["result"])
        ended = env.step({"type": "answer", "content": answer})
        show("end", {"reward": ended.reward, "done": ended.done, "outcome": ended.metadata["outcome"]})
        show("state", env.state())


def with_mcp_tool_client(url: str, reset: dict[str, Any], args: argparse.Namespace) -> None:
    print("MCPToolClient (POST /mcp + /ws)")
    with MCPToolClient(base_url=url).sync() as env:
        opened = env.reset(**reset)
        messages = opened.observation.messages
        show("task", messages[-1]["content"])
        tools = [t.name for t in env.list_tools(use_cache=False)]  # a drift changes them: do not cache across turns
        show("tools", tools)
        calls, answer = policy(messages, tools, args)
        for name, arguments in calls:
            show(name, call(env, name, arguments))
        ended = env.step(Answer(content=answer))
        show("end", {"reward": ended.reward, "done": ended.done, "outcome": ended.metadata["outcome"]})
        show("state", env.state().model_dump())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, help="a drawn train case")
    parser.add_argument("--tier", help="perception, interaction, reasoning or internalization")
    parser.add_argument("--task", help="an explicit train task id")
    parser.add_argument("--stack", action="append", help="NAME[:SEVERITY][@ONSET], repeatable")
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("TOOL", "JSON"))
    parser.add_argument("--answer", default="I cannot complete this request.")
    args = parser.parse_args()
    reset = {key: getattr(args, key) for key in ("seed", "tier", "task", "stack") if getattr(args, key) is not None}
    with_generic_client(args.url, reset, args)
    with_mcp_tool_client(args.url, reset, args)


if __name__ == "__main__":
    main()
