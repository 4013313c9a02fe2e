"""A server's argument names are its own: one named ``state`` (an address's, as τ² retail's tools take) reaches
the server, not the domain's handler."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from mcp.server.mcpserver import MCPServer

from sandbox import Call, UserTask
from sandbox.domains.mcp import mcp_domain


def addresses() -> MCPServer:
    server = MCPServer("addresses", log_level="WARNING")

    @server.tool()
    def format_address(city: str, state: str) -> dict:
        """An address on one line."""
        return {"line": f"{city}, {state}"}

    return server


def test_an_argument_named_state_reaches_the_server():
    task = UserTask("Write Austin in Texas as one line.", id="line", sources={"line": "f.line"},
                    plan=[Call(id="f", tool="format_address", args={"city": "Austin", "state": "TX"})])  # fmt: skip
    domain = mcp_domain(addresses(), [task], roles={"format_address": "lookup"})
    try:
        assert domain.listed[0].answer == {"line": "Austin, TX"}
    finally:
        domain.close()
