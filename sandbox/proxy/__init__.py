"""The proxy that serves a perturbed env as an MCP server (``server``), and ``openagent mcp-proxy`` (``serve``).

Any env can be served, whatever its domain: :class:`~sandbox.agents.mcp.McpAgent` serves each episode's
env to the user's MCP client, and ``openagent mcp-proxy`` serves an MCP server's tools perturbed. Importing
this package imports no MCP library; serving does (the ``mcp`` extra).
"""
