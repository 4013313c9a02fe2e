"""The episode's tools as OpenAI Agents SDK ``FunctionTool`` objects (the ``openai-agents`` extra)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from sandbox.agents.loop import EpisodeTool, EpisodeTools
from sandbox.errors import require_extra

if TYPE_CHECKING:
    from agents import FunctionTool, Tool


def openai_agents_tools(tools: EpisodeTools) -> list[Tool]:
    """One ``FunctionTool`` per tool for ``Agent(tools=...)``: name, description and JSON schema as the episode
    shows them (not made strict: a perturbed schema is given as it is), the arguments' JSON text passed on as
    the model wrote it, for the env to judge.

    The list is kept current: when the tool list changes mid-episode (drift) it is replaced in place, and the
    SDK reads ``agent.tools`` afresh at every turn, so the model's next turn sees the new tools. Give each
    episode its own ``Agent`` (``agent.clone(tools=...)``), as the SDK asks of agents whose tools change.
    """
    require_extra("openai-agents", ("agents",), "openai_agents_tools")
    current: list[Tool] = [_function_tool(tool) for tool in tools]  # the list Agent(tools=...) takes and keeps

    def refresh(changed: EpisodeTools) -> None:
        current[:] = [_function_tool(tool) for tool in changed]

    tools.on_change(refresh)
    return current


def _function_tool(tool: EpisodeTool) -> FunctionTool:
    from agents import FunctionTool

    async def invoke(ctx: Any, arguments: str) -> str:
        return await asyncio.to_thread(tool.call, arguments if arguments.strip() else {})

    return FunctionTool(name=tool.name, description=tool.description, params_json_schema=tool.parameters,
                        on_invoke_tool=invoke, strict_json_schema=False)  # fmt: skip


__all__ = ["openai_agents_tools"]
