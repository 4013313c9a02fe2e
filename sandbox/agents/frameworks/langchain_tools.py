"""The episode's tools as LangChain ``StructuredTool`` objects (the ``langchain`` extra)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from sandbox.agents.loop import EpisodeTool, EpisodeTools
from sandbox.errors import require_extra

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool


def langchain_tools(tools: EpisodeTools) -> list[StructuredTool]:
    """One ``StructuredTool`` per tool, its name, description and JSON schema as the episode shows them.

    The arguments reach the env as the model wrote them (a JSON-schema ``args_schema`` is not validated by
    LangChain), so a wrong argument is the env's to judge. The list is fixed when built: a LangGraph agent
    binds its tools once (``ToolNode``), so drift that renames a tool reaches it only as the error a call by
    the old name gets.
    """
    require_extra("langchain", ("langchain_core",), "langchain_tools")
    return [_structured(tool) for tool in tools]


def _structured(tool: EpisodeTool) -> StructuredTool:
    from langchain_core.tools import StructuredTool

    def call(**arguments: Any) -> str:
        return tool.call(arguments)

    async def acall(**arguments: Any) -> str:  # an async graph (ainvoke) keeps its event loop free
        return await asyncio.to_thread(tool.call, arguments)

    return StructuredTool(name=tool.name, description=tool.description, args_schema=tool.parameters, func=call,
                          coroutine=acall)  # fmt: skip


__all__ = ["langchain_tools"]
