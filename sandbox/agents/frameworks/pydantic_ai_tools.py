"""The episode's tools as a pydantic-ai toolset (the ``pydantic-ai`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sandbox.agents.loop import EpisodeTool, EpisodeTools
from sandbox.errors import require_extra

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset


def pydantic_ai_toolset(tools: EpisodeTools) -> AbstractToolset[Any]:
    """A toolset for ``Agent(toolsets=[...])`` or ``agent.run(request, toolsets=[...])``: each tool's name,
    description and JSON schema as the episode shows them, the arguments passed on as the model wrote them
    (``Tool.from_schema`` skips validation: the env judges them).

    It is a ``DynamicToolset`` evaluated at every step of the run, so a tool list that changes mid-episode
    (drift) reaches the model at its next step.
    """
    require_extra("pydantic-ai", ("pydantic_ai",), "pydantic_ai_toolset")
    from pydantic_ai.toolsets import DynamicToolset

    built: dict[int, FunctionToolset[Any]] = {}

    def current(ctx: Any) -> FunctionToolset[Any]:
        if tools.version not in built:
            built.clear()
            built[tools.version] = _function_toolset(tools)
        return built[tools.version]

    return DynamicToolset(current, per_run_step=True)


def _function_toolset(tools: EpisodeTools) -> FunctionToolset[Any]:
    from pydantic_ai.toolsets import FunctionToolset

    return FunctionToolset([_tool(tool) for tool in tools])


def _tool(tool: EpisodeTool) -> Any:
    from pydantic_ai import Tool

    def call(**arguments: Any) -> str:  # a sync function: pydantic-ai runs it in a worker thread
        return tool.call(arguments)

    return Tool.from_schema(call, name=tool.name, description=tool.description, json_schema=tool.parameters)


__all__ = ["pydantic_ai_toolset"]
