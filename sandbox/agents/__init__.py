from sandbox.agents.oracle import OracleAgent
from sandbox.agents.scripted import ScriptedAgent

__all__ = ["OracleAgent", "ScriptedAgent"]
