"""An MCP server's tools as a domain: listed into specs, called through the SDK, reset between episodes,
versioned by what the server reports, over memory, stdio and streamable HTTP."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

import notes_server
from conftest import stdio
from notes_tasks import TASKS

import sandbox
from sandbox.agent import Reply
from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain, parse_target
from sandbox.errors import UsageError

OUTCOMES = {"text": "success", "title": "success", "chain": "success", "add": "success", "share": "refused"}


def _outcomes(domain):
    sandbox.register_domain(domain, replace=True)
    try:
        episodes = run_cases(OracleAgent(), [Case(t) for t in domain.listed])
        return {t.id.removeprefix(f"{domain.name}-"): e.outcome for t, e in zip(domain.listed, episodes, strict=True)}
    finally:
        DOMAINS.pop(domain.name, None)


def test_the_tool_list_becomes_specs_and_the_gold_plans_give_answers():
    domain = mcp_domain(notes_server.build(), TASKS, name="notes-mem", inspect="tool:list_notes")
    try:
        specs = {s["function"]["name"]: s["function"] for s in domain.toolbox.specs()}
        assert set(specs) == {"search_notes", "get_note", "add_note", "list_notes"}, "the reset tool is hidden"
        assert specs["get_note"]["parameters"] == {
            "type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"],
        }  # fmt: skip
        assert specs["get_note"]["description"].startswith("Get the details of one note")
        by_id = {t.id: t for t in domain.listed}
        assert by_id["notes-mem-text"].answer == {"text": "milk, eggs, rye bread"}
        assert by_id["notes-mem-chain"].answer == {"text": "Tuesday at 9:30"}
        assert {t.name: t.role for t in domain.tools}["add_note"] == "write", "the replayed plan changed the notes"
        assert domain.end_state_ok(by_id["notes-mem-add"], domain.fresh_state()) is False
        assert _outcomes(domain) == OUTCOMES
    finally:
        domain.close()


def test_a_bad_call_is_an_observation_and_episodes_do_not_see_each_others_writes():
    domain = mcp_domain(notes_server.build(), TASKS, name="notes-mem")
    try:
        one, two = domain.fresh_state(), domain.fresh_state()
        box = domain.toolbox
        assert box.call(None, one, "add_note", {"title": "a", "text": "b", "tag": "home"}).content["note_id"] == "n4"
        missing = box.call(None, two, "get_note", {"note_id": "n4"})
        assert missing.error == "not_found" and missing.message.endswith("no note 'n4': not found")
        assert box.call(None, one, "get_note", {"note_id": "n4"}).content["title"] == "a", "one's write came back"
        assert box.call(None, one, "get_note", {"nid": "n1"}).error == "invalid_arguments"
        assert [name for name, _, _ in one.results] == ["add_note", "get_note"]
    finally:
        domain.close()


def test_the_version_names_the_server_and_hashes_its_tools():
    first = mcp_domain(notes_server.build(), TASKS, name="notes-v")
    bumped = mcp_domain(notes_server.build(version="1.1"), TASKS, name="notes-v")
    try:
        assert "+mcp2:notes@1.0:" in first.version() and "+mcp2:notes@1.1:" in bumped.version()
        assert first.tools_digest == bumped.tools_digest
        server = notes_server.build()

        @server.tool()
        def archive(note_id: str) -> dict:
            """Archive a note."""
            return {}

        grown = mcp_domain(server, TASKS, name="notes-v")
        assert grown.tools_digest != first.tools_digest
        keys = []
        for domain in (first, bumped, grown):
            sandbox.register_domain(domain, replace=True)
            keys.append(Case(domain.listed[0]).key())
        assert len(set(keys)) == 3, "a changed server is never served the old episodes"
    finally:
        DOMAINS.pop("notes-v", None)
        for domain in (first, bumped):
            domain.close()


def test_over_stdio_one_process_reset_by_its_tool():
    domain = mcp_domain(stdio(), TASKS, name="notes-stdio", inspect="tool:list_notes")
    try:
        assert domain.link.reset == "tool:reset" and domain.link.target.kind == "stdio"
        assert _outcomes(domain) == OUTCOMES
    finally:
        domain.close()


def test_restart_gives_each_episode_its_own_server():
    domain = mcp_domain(notes_server.build, TASKS, name="notes-fresh", reset="restart", inspect="tool:list_notes")
    one, two = domain.fresh_state(), domain.fresh_state()
    one.send("add_note", {"title": "a", "text": "b", "tag": "home"})
    assert len(one.model_dump()["notes"]) == 4 and len(two.model_dump()["notes"]) == 3
    assert one._own is not two._own
    assert _outcomes(domain) == OUTCOMES


@pytest.mark.slow
def test_restart_over_stdio_starts_a_process_per_episode():
    domain = mcp_domain(stdio(), TASKS, name="notes-stdio", reset="restart", inspect="tool:list_notes")
    assert domain.link.isolated
    assert _outcomes(domain) == OUTCOMES


def test_over_streamable_http_reset_by_its_tool(notes_url):
    domain = mcp_domain(notes_url, TASKS, name="notes-http", inspect="tool:list_notes")
    try:
        assert domain.link.reset == "tool:reset" and domain.server_name == "notes"
        assert _outcomes(domain) == OUTCOMES
    finally:
        domain.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("stdio:", "'stdio:' needs a command"),
        ("ftp://x", "not a server address; write it as 'stdio:python -m my_server'"),
        ("http://bad host/mcp", "is no URL"),
        ("stdio:python 'unclosed", "the command does not parse"),
    ],
)
def test_a_bad_address_says_how_to_write_one(spec, message):
    with pytest.raises(UsageError, match=message):
        parse_target(spec)


def test_a_server_that_does_not_start_or_lacks_the_reset_tool_is_misuse(tmp_path):
    with pytest.raises(UsageError, match=r"cannot start MCP server stdio:.*check that .* starts an MCP server"):
        mcp_domain(f"stdio:{tmp_path / 'no-such-server'}", TASKS, timeout=5)
    with pytest.raises(UsageError, match="has no tool 'wipe'; its tools: search_notes"):
        mcp_domain(notes_server.build(), TASKS, reset="tool:wipe")
    no_reset = notes_server.build()
    no_reset.remove_tool("reset")
    with pytest.raises(UsageError, match=r"add_note, list_notes may change the server's state.*nothing resets it"):
        mcp_domain(no_reset, TASKS, inspect="tool:list_notes")
    with pytest.raises(UsageError, match="which a server object \\(give a function that builds one\\) cannot"):
        mcp_domain(notes_server.build(), TASKS, reset="restart")
    with pytest.raises(UsageError, match="reset='restart' starts a fresh server per episode, which a URL cannot"):
        from sandbox.domains.mcp.link import check_reset

        check_reset("restart", parse_target("http://127.0.0.1:1/mcp"))


def test_a_reset_hook_and_a_check_over_what_the_server_returned():
    resets = []

    def reset(connection):
        resets.append(connection.call("reset", {}))

    def quoted_the_new_id(episode, state):
        added = [result for tool, _, result in state.results if tool == "add_note"]
        listed = state.call("list_notes")["notes"]
        ok = added and episode.answer and added[-1]["note_id"] in episode.answer and len(listed) == 4
        return "success" if ok else "wrong_answer"

    task = sandbox.UserTask("Add a note titled Call Bob saying at 5pm, tagged work, and tell me its id.", id="id",
                            check=quoted_the_new_id)  # fmt: skip
    domain = mcp_domain(notes_server.build(), [task], name="notes-hook", reset=reset)
    sandbox.register_domain(domain, replace=True)

    def adder(messages, tools):
        if messages[-1]["role"] != "tool":
            args = {"title": "Call Bob", "text": "at 5pm", "tag": "work"}
            return Reply(tool_calls=[{"function": {"name": "add_note", "arguments": args}}])
        return f"Added: {messages[-1]['content']}"

    try:
        first, second = run_cases(adder, [Case(domain.listed[0]), Case(domain.listed[0])])
        assert (first.outcome, second.outcome) == ("success", "success"), "each episode found 3 notes and added one"
        lazy = run_cases(lambda messages, tools: "Added it.", [Case(domain.listed[0])])[0]
        assert lazy.outcome == "wrong_answer"
        assert resets and all(r == {"reset": True} for r in resets)
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()


def _annotated_server():
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("desk", log_level="WARNING")
    loans: list[str] = []

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def count_loans() -> dict:
        """How many copies are out."""
        return {"out": len(loans)}

    @server.tool(annotations=ToolAnnotations(destructiveHint=False, idempotentHint=False))
    def lend(book_id: str) -> dict:
        """Lend one more copy of a book."""
        loans.append(book_id)
        return {"out": len(loans)}

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=True))
    def mark_lost(book_id: str) -> dict:
        """Mark a book as lost."""
        return {"book_id": book_id, "lost": True}

    @server.tool()
    def note(text: str) -> dict:
        """Leave a note at the desk."""
        return {"noted": text}

    return server


def test_mcp_annotations_give_roles_and_a_tool_without_them_has_none_known():
    domain = mcp_domain(_annotated_server(), reset=None, name="desk")
    try:
        roles = {t.name: (t.role, t.role_known, t.idempotent) for t in domain.tools}
        assert roles == {
            "count_loans": ("lookup", True, False), "lend": ("write", True, False),
            "mark_lost": ("write", True, True), "note": ("lookup", False, False),
        }  # fmt: skip
    finally:
        domain.close()
