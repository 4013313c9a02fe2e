"""The episode's tools as each framework's own tool type; each adapter imports its framework when called.

- :func:`langchain_tools`: LangChain ``StructuredTool`` objects (LangGraph's prebuilt agents take them).
- :func:`pydantic_ai_toolset`: a pydantic-ai toolset, read afresh at each step of the run.
- :func:`openai_agents_tools`: OpenAI Agents SDK ``FunctionTool`` objects, in a list kept current.
"""

from sandbox.agents.frameworks.langchain_tools import langchain_tools
from sandbox.agents.frameworks.openai_agents_tools import openai_agents_tools
from sandbox.agents.frameworks.pydantic_ai_tools import pydantic_ai_toolset

__all__ = ["langchain_tools", "openai_agents_tools", "pydantic_ai_toolset"]
