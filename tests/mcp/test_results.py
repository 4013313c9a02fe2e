"""What an MCP server returns, read as data: a list sent one JSON block per row is a list of rows, a crash
whose cause the SDK hides is an error not to retry, and the proxy passes structured content and annotations."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

import sandbox
from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from sandbox.domains.mcp.connection import error_kind
from sandbox.proxy.server import EnvBackend, build_server

READ = ToolAnnotations(readOnlyHint=True)


def _shelf() -> MCPServer:
    server = MCPServer("shelf", log_level="WARNING")
    books = [{"book_id": "b1", "title": "Dune"}, {"book_id": "b2", "title": "Emma"}, {"book_id": "b3", "title": "Kim"}]

    @server.tool(annotations=READ, structured_output=False)
    def list_books(shelf: str) -> list[dict]:
        """The books on a shelf, one row each."""
        return books if shelf == "fiction" else []

    @server.tool(annotations=READ)
    def inventory() -> dict:
        """How many books there are."""
        return {"count": len(books)}

    @server.tool(annotations=READ)
    def audit(year: int) -> dict:
        """The shelf's audit of a year."""
        raise RuntimeError("the audit table is corrupt")  # the SDK hides this from the client

    return server


TASKS = [
    sandbox.UserTask("What is the title of the second fiction book?", id="second", sources={"title": "l.1.title"},
                     plan=[sandbox.Call(id="l", tool="list_books", args={"shelf": "fiction"})]),
    sandbox.UserTask("Show me the audit of 2024.", id="audit", unsolvable="fatal_error",
                     plan=[sandbox.Call(id="a", tool="audit", args={"year": 2024})]),
]  # fmt: skip


def test_a_list_sent_one_json_block_per_row_is_a_list_of_rows():
    domain = mcp_domain(_shelf(), TASKS, name="shelf")
    try:
        by_id = {t.id: t for t in domain.listed}
        assert by_id["shelf-second"].answer == {"title": "Emma"}, "a task points into a row"
        rows = domain.toolbox.call(None, domain.fresh_state(), "list_books", {"shelf": "fiction"}).content
        assert rows == [{"book_id": "b1", "title": "Dune"}, {"book_id": "b2", "title": "Emma"},
                        {"book_id": "b3", "title": "Kim"}]  # fmt: skip
        assert domain.toolbox.call(None, domain.fresh_state(), "list_books", {"shelf": "poetry"}).content == []
    finally:
        domain.close()


def test_a_crash_whose_cause_the_sdk_hides_is_not_retried_and_the_oracle_refuses():
    domain = sandbox.register_domain(mcp_domain(_shelf(), TASKS, name="shelf"), replace=True)
    try:
        failed = domain.toolbox.call(None, domain.fresh_state(), "audit", {"year": 2024})
        assert (failed.error, failed.message) == ("fatal", "Error executing tool audit")
        episode = run_cases(OracleAgent(), [Case(domain.listed[1])])[0]
        assert episode.outcome == "refused", episode.explain()
        assert sum(r.name == "audit" for s in episode.steps for r in s.results) == 1, "sent once, never again"
    finally:
        DOMAINS.pop("shelf", None)
        domain.close()


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        ("Error executing tool audit", "fatal"),
        ("Error executing tool outer Error executing tool inner", "fatal"),
        ("Error executing tool typed: 1 validation error for typedArguments\nx\n  Input should be a valid integer",
         "invalid_arguments"),
        ("Unknown tool: nope", "unknown_tool"),
        ("Error executing tool get_note: no note 'n9': not found", "not_found"),
        ("Error executing tool get_note: the database is busy, try again", "runtime_error"),
    ],
)  # fmt: skip
def test_the_sdks_words_give_the_error_kind(words, kind):
    assert error_kind(words) == kind


def test_the_proxy_passes_structured_content_and_annotations():
    domain = sandbox.register_domain(mcp_domain(_shelf(), TASKS, name="shelf"), replace=True)
    try:
        server = build_server(EnvBackend(Case(domain.listed[0]).env()), "proxy")

        async def play():
            async with Client(server) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                return tools, await client.call_tool("inventory", {})

        tools, result = asyncio.run(play())
        assert tools["inventory"].annotations.read_only_hint is True
        assert result.structured_content == {"count": 3} and not result.is_error
    finally:
        DOMAINS.pop("shelf", None)
        domain.close()
