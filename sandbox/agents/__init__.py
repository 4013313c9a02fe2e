from sandbox.agents.loop import EpisodeTool, EpisodeTools, Loop, LoopAgent
from sandbox.agents.mcp import McpAgent
from sandbox.agents.oracle import OracleAgent
from sandbox.agents.scripted import ScriptedAgent
from sandbox.agents.static import StaticAgent

__all__ = [
    "EpisodeTool",
    "EpisodeTools",
    "Loop",
    "LoopAgent",
    "McpAgent",
    "OracleAgent",
    "ScriptedAgent",
    "StaticAgent",
]
