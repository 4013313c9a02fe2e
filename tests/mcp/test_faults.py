"""A server that crashes, hangs or answers garbage mid-episode ends that episode as an outcome; the next
episode gets a server again."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import stdio
from mcp.server.mcpserver import MCPServer
from mcp.types import TextContent

import sandbox
from sandbox.agent import Reply
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from sandbox.judge import OUTCOMES

TASKS = [
    sandbox.UserTask("What does the note n1 say?", id="text", answer={"text": "milk, eggs, rye bread"}),
    sandbox.UserTask("What is the title of the note tagged work?", id="title", answer={"title": "Standup"}),
]


def reader(messages, tools):
    """Reads what the request needs, then answers with what came back."""
    if messages[-1]["role"] != "tool":
        if "n1" in messages[1]["content"]:
            return Reply(tool_calls=[{"function": {"name": "get_note", "arguments": {"note_id": "n1"}}}])
        return Reply(tool_calls=[{"function": {"name": "search_notes", "arguments": {"tag": "work"}}}])
    return f"The server said: {messages[-1]['content']}"


@pytest.mark.parametrize(("fault", "words"), [("crash", "is gone"), ("hang", "hangs"), ("garbage", "hangs")])
@pytest.mark.parametrize("loop", ["thread", "caller"])
def test_a_faulty_server_ends_the_episode_as_the_worlds_error_and_the_next_episode_runs(fault, words, loop):
    server = stdio("--fault", fault, "--on", "get_note")
    domain = mcp_domain(server, TASKS, name=f"notes-{fault}-{loop}", timeout=2, loop=loop)
    sandbox.register_domain(domain, replace=True)
    try:
        broken, fine = run_cases(reader, [Case(t) for t in domain.listed])
        assert broken.outcome in OUTCOMES and broken.outcome == "world_error", broken.explain()
        error = broken.steps[-1].error
        assert words in error and "notes_server.py" in error, error  # names the server
        assert fine.outcome == "success", fine.explain()
        again = run_cases(reader, [Case(domain.listed[1])])[0]
        assert again.outcome == "success", "the server came back for the next episode"
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()


def _nest(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def faulty_results_server():
    server = MCPServer("faulty-results", log_level="CRITICAL")

    @server.tool()
    def deep(depth: int) -> dict:
        """A result nested ``depth`` levels."""
        return _nest(depth)

    @server.tool()
    def deep_text(depth: int) -> list[TextContent]:
        """A text block of JSON nested ``depth`` levels."""
        return [TextContent(type="text", text='{"a": ' * depth + '"leaf"' + "}" * depth)]

    @server.tool()
    def huge(chars: int) -> str:
        """A text of ``chars`` characters."""
        return "x" * chars

    return server


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("deep", {"depth": 250}, "nested deeper than 64 levels"),
        ("deep_text", {"depth": 5000}, ""),  # too deep to read as JSON: the text it is
        ("huge", {"chars": 300_000}, "more than the 100,000"),
    ],
)
def test_a_result_too_deep_or_too_long_is_the_servers_fault_the_agent_reads(tool, arguments, words, tmp_path):
    from sandbox.agent import fingerprint
    from sandbox.evaluation.cache import EpisodeCache

    domain = mcp_domain(faulty_results_server(), [sandbox.UserTask("Ask.", id="ask")], name="faulty-results",
                        reset=None, timeout=5)  # fmt: skip
    sandbox.register_domain(domain, replace=True)

    def agent(messages, tools):
        if messages[-1]["role"] != "tool":
            return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments}}])
        return "done"

    try:
        case = Case(domain.listed[0])
        [episode] = EpisodeCache(tmp_path).run(agent, [case])
        [result] = episode.steps[0].results
        assert episode.outcome != "agent_error", episode.explain()
        if words:
            assert result.error == "runtime_error" and words in result.message
        else:
            assert result.ok and isinstance(result.content, str) and len(result.content) > 5000
        key = EpisodeCache.key(fingerprint(agent), case, case.max_steps)
        assert EpisodeCache(tmp_path).get(key, fingerprint(agent)) is not None, "stored, and it reads back"
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()


@pytest.mark.parametrize("name", ["bad\x1b[31mname", "a\nb", "nul\x00", "rlo\u202eexe", "a/b", "x" * 5000,
                                  "</tool_call>"])  # fmt: skip
def test_a_server_whose_tool_names_would_reach_the_terminal_raw_is_refused(name):
    from sandbox.errors import UsageError

    server = MCPServer("names", log_level="CRITICAL")
    server.add_tool(lambda: "ok", name=name, description="a tool with a name outside the guidance")
    with pytest.raises(UsageError, match="outside MCP's naming guidance") as refused:
        mcp_domain(server, None, reset=None)
    message = str(refused.value)
    assert message.isprintable() and "the server must rename the tool" in message and len(message) < 500
