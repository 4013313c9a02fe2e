"""Scripted agents that speak MCP themselves (an SDK client each), played through the proxy by McpAgent."""

from __future__ import annotations

import asyncio

from mcp import Client
from notes_tasks import TASKS

from sandbox.agents.mcp import McpAgent


def _task(query: str):
    """The task whose request is ``query`` (as the case words it: the clean words, maybe with more around them)."""
    asked = query.casefold()
    return next((t for t in TASKS if t.query.casefold().rstrip("!.?") in asked), None)


def by_name(url: str, query: str) -> str:
    """Knows the notes server's tools by their names and calls them as the gold plan does: brittle by design."""
    task = _task(query)
    if task is None or task.unsolvable:
        return "Sorry, I cannot do that with these tools."

    async def play() -> str:
        texts = []
        async with Client(url) as client:
            for call in task.plan:
                result = await client.call_tool(call.tool, dict(call.args))
                texts.append(" ".join(getattr(block, "text", "") for block in result.content))
        return "Done: " + " | ".join(texts)

    return asyncio.run(play())


BY_NAME = McpAgent(by_name, name="by-name")
