"""MCP worlds that cannot leak: a reset is verified before the gold replay, a server without one is refused
before any call that could change it, and a server whose state outlives its process is caught."""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

import notes_server
from conftest import http_notes, stdio
from notes_tasks import TASKS

import sandbox
from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from sandbox.domains.mcp.connection import Connection
from sandbox.domains.mcp.target import parse_target
from sandbox.domains.mcp.verify import ResetUnverified
from sandbox.errors import UsageError


def _notes_held(server) -> int:
    """How many notes the live server holds, asked directly."""
    connection = Connection(parse_target(server))
    try:
        return len(connection.call("list_notes", {})["notes"])
    finally:
        connection.close()


def _clean_success(domain) -> float:
    sandbox.register_domain(domain, replace=True)
    try:
        solvable = [t for t in domain.listed if t.unsolvable is None]
        episodes = run_cases(OracleAgent(), [Case(t) for t in solvable * 2])
        return sum(e.outcome == "success" for e in episodes) / len(episodes)
    finally:
        DOMAINS.pop(domain.name, None)


def test_a_server_object_without_a_reset_is_refused_before_anything_changes_it():
    server = notes_server.build(reset="none")
    with pytest.raises(UsageError, match=r"add_note.*nothing resets it between episodes"):
        mcp_domain(server, TASKS, inspect="tool:list_notes")
    assert _notes_held(server) == 3
    lookups = {"get_note": "lookup", "search_notes": "lookup", "list_notes": "lookup", "add_note": "lookup"}
    declared = mcp_domain(server, TASKS[:3], roles=lookups)  # tools declared lookups need no reset
    declared.close()


@pytest.mark.slow
def test_a_server_over_http_without_a_reset_is_refused_before_anything_changes_it():
    with http_notes("--reset", "none") as url:
        with pytest.raises(UsageError, match=r"add_note.*nothing resets it between episodes.*'none' if the writes "
                                             "do not matter.*--mcp-reset"):  # fmt: skip
            mcp_domain(url, TASKS, inspect="tool:list_notes")
        assert _notes_held(url) == 3, "the gold plan's add_note never reached the live server"
        writes_do_not_matter = mcp_domain(url, TASKS, reset="none")
        writes_do_not_matter.close()


@pytest.mark.slow
def test_a_server_over_http_with_a_reset_tool_is_verified_and_keeps_every_episode_clean():
    with http_notes() as url:
        domain = mcp_domain(url, TASKS, name="notes-http-reset", inspect="tool:list_notes")
        try:
            assert _clean_success(domain) == 1.0
        finally:
            domain.close()


def test_a_reset_tool_that_does_not_reset_is_refused_with_how_to_reset():
    with pytest.raises(ResetUnverified) as caught:
        mcp_domain(notes_server.build(reset="broken"), TASKS, inspect="tool:list_notes")
    message = str(caught.value)
    # the second pass found the first pass's note before the first plan: the look-up task 'text' shows it
    assert "task 'text'" in message and "a call of its reset tool 'reset' between" in message
    assert "does not bring the server back to its first state" in message and "--mcp-reset" in message


def test_a_server_whose_state_outlives_a_restart_is_refused(tmp_path):
    store = str(tmp_path / "notes.json")
    factory = functools.partial(notes_server.build, reset="none", store=store)
    with pytest.raises(ResetUnverified, match=r"a fresh server \(reset='restart'\) between.*from your factory does "
                                              "not start from the same state: its servers share state"):  # fmt: skip
        mcp_domain(factory, TASKS)
    clean = functools.partial(notes_server.build, reset="none")
    domain = mcp_domain(clean, TASKS, name="notes-restart-clean", inspect="tool:list_notes")
    assert domain.link.isolated and _clean_success(domain) == 1.0


@pytest.mark.slow
def test_over_stdio_a_server_keeping_its_notes_in_a_file_is_refused(tmp_path):
    store = tmp_path / "notes.json"
    with pytest.raises(ResetUnverified, match="keeps state outside its process"):
        mcp_domain(stdio("--reset", "none", "--store", str(store)), TASKS)
    store.unlink()
    domain = mcp_domain(stdio("--store", str(store)), TASKS, name="notes-stdio-store", inspect="tool:list_notes")
    try:
        assert domain.link.reset == "tool:reset" and _clean_success(domain) == 1.0
    finally:
        domain.close()


def test_a_reset_written_as_text_is_read_as_python_takes_it():
    from sandbox.domains.mcp.settings import parse_reset, reset_value

    assert reset_value("none") is None and reset_value(None) == "auto" and reset_value("tool:wipe") == "tool:wipe"
    assert reset_value("notes_server:broken") is notes_server.broken, "module:function names a hook"
    with pytest.raises(UsageError, match="reset hook 'notes_server:nothing': module 'notes_server' has no attribute"):
        reset_value("notes_server:nothing")
    with pytest.raises(UsageError, match=r"reset 'tool:': give 'auto', 'restart', 'tool:NAME', 'none'"):
        parse_reset("tool:")


def test_a_reset_mismatch_shows_where_two_long_results_differ():
    from sandbox.domains.mcp.verify import _apart

    first = '{"results": [' + ", ".join(f'"note {i}"' for i in range(40)) + "]}"
    second = first.replace('"note 37"', '"note 99"')
    one, two = _apart(first, second)
    assert "note 37" in one and "note 99" in two and one != two
    assert _apart("short", "other") == ("short", "other")


def test_reset_none_on_a_server_that_writes_is_said_once_with_what_it_skips():
    from sandbox.errors import OpenAgentWarning

    with pytest.warns(OpenAgentWarning, match=r"reset none, and the gold plans of \d+ task\(s\) call tools that may "
                      r"change its state \(.*add_note.*\): episodes see each other's writes"):  # fmt: skip
        domain = mcp_domain(notes_server.build(reset="none"), TASKS, name="notes-unreset", reset=None)
    domain.close()


def test_tools_with_no_role_are_said_once_and_declared_roles_silence_it():
    import warnings

    from sandbox.errors import OpenAgentWarning

    with pytest.warns(OpenAgentWarning, match="declare no role") as caught:
        domain = mcp_domain(notes_server.build(), TASKS, name="notes-roles", inspect="tool:list_notes")
    domain.close()
    assert sum("declare no role" in str(w.message) for w in caught) == 1
    roles = {"get_note": "lookup", "search_notes": "lookup", "list_notes": "lookup", "add_note": "write"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", OpenAgentWarning)
        mcp_domain(notes_server.build(), TASKS, name="notes-roles", inspect="tool:list_notes", roles=roles).close()
