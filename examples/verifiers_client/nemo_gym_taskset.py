"""Play a row of ``openagent env-serve`` through verifiers' NeMo Gym taskset (``verifiers`` 0.4:
``verifiers.v1.tasksets.nemo_gym``, its client for a NeMo Gym resources server): ``NeMoGymTaskset`` loads the rows,
``NeMoGymTask.setup`` seeds the session (cookie, MCP metadata), ``NeMoGymToolset`` lists and calls the tools over
that MCP, and the task's ``nemo_gym`` reward converts the rollout to a Responses object and scores it with
``/verify``.

Run it in verifiers' venv (``pip install verifiers==0.4.0``), against the server in the project's venv:

    openagent env-serve poi --port 8000 --reward refusal-aware
    openagent env-serve poi --write-rows rows.jsonl --rows 8 --tier perception
    python nemo_gym_taskset.py --url http://127.0.0.1:8000 --rows rows.jsonl --index 2 \\
        --call NAME JSON ... --answer TEXT

verifiers runs a harness and a served model between setup and reward; here ``policy`` stands for both: it plays
the ``--call``s given through the toolset, then ``--answer``, and the rollout is kept as the branch of messages a
verifiers trace holds (the only part of the trace the reward reads).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from verifiers.v1.mcp import SharedToolsetConfig
from verifiers.v1.mcp.server import _call_state
from verifiers.v1.tasksets.nemo_gym import NeMoGymConfig, NeMoGymTaskConfig, NeMoGymTaskset
from verifiers.v1.tasksets.nemo_gym.toolset import NeMoGymState, NeMoGymToolset
from verifiers.v1.types import AssistantMessage, ToolCall, ToolMessage


def show(what: str, value: Any) -> None:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    print(f"  {what}: {text[:200]}")


async def play(args: argparse.Namespace) -> None:
    config = NeMoGymConfig(dataset=Path(args.rows), task=NeMoGymTaskConfig(resources_url=args.url))
    task = list(NeMoGymTaskset(config).load())[args.index]
    state = NeMoGymState()
    trace = SimpleNamespace(id="trace0", state=state, info={}, metrics={}, branches=[SimpleNamespace(nodes=[])])
    trace.record_metric = lambda name, value: trace.metrics.__setitem__(name, float(value))
    await task.setup(trace, None)
    show("seeded", {"cookies": sorted(state.cookies), "mcp_url": state.mcp_url})
    toolset = NeMoGymToolset(SharedToolsetConfig())
    _call_state.set(state)  # the rollout's state, as verifiers' MCP server binds it for each call
    show("tools (MCP)", [t.name for t in await toolset.list_tools()])

    nodes = trace.branches[0].nodes

    def record(message: Any) -> None:
        nodes.append(SimpleNamespace(message=message, sampled=isinstance(message, AssistantMessage),
                                     timestamp=time.time()))  # fmt: skip

    for i, (name, arguments) in enumerate(args.call):  # policy: the calls given, then the answer
        record(AssistantMessage(tool_calls=[ToolCall(id=f"call_{i}", name=name, arguments=arguments)]))
        result = await toolset.call_tool(name, json.loads(arguments))
        show(f"call {name}", result.content[0].text)
        record(ToolMessage(tool_call_id=f"call_{i}", content=result.content[0].text))
    record(AssistantMessage(content=args.answer))
    reward = await task.nemo_gym(trace)
    show("reward", reward)
    show("verify", trace.info["nemo_gym"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--rows", required=True, help="rows written by openagent env-serve DOMAIN --write-rows")
    parser.add_argument("--index", type=int, default=0, help="which row to play (default 0)")
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("TOOL", "JSON"))
    parser.add_argument("--answer", default="I cannot complete this request.")
    asyncio.run(play(parser.parse_args()))


if __name__ == "__main__":
    main()
