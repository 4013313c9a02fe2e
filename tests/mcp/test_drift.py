"""Drift over MCP: the oracle follows every applied drift case of an MCP server, and the proxy really sends
``notifications/tools/list_changed`` and serves the new list (an SDK client sees both, over stdio and HTTP)."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

import notes_server
from conftest import SERVER, proxy_process, write_tasks
from mcp import Client, StdioServerParameters
from notes_tasks import TASKS

import sandbox
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from tests.sandbox.test_drift import DRIFTING, drift_cases, oracle_wrong

UPSTREAM = f"stdio:{sys.executable} {SERVER}"


def test_the_oracle_is_right_on_every_applied_drift_case_of_an_mcp_server():
    domain = mcp_domain(notes_server.build(), TASKS, name="notes-drift", inspect="tool:list_notes")
    sandbox.register_domain(domain, replace=True)
    try:
        cases = drift_cases(domain.name, domain.listed, onsets=(1, 2))
        wrong = oracle_wrong(cases)
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()
    # the notes server declares no verification codes and no enums (which tool_split and enum_widened change)
    unused = {"verification_code_shift", "tool_split", "enum_widened"}
    assert {p.name for c in cases for p in c.perturbations} >= set(DRIFTING) - unused
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n\n" + "\n\n".join(wrong[:2])


async def _drift(client):
    """The tools before, the first call, the notification, the tools after it, and a call by a new name."""
    before = sorted(t.name for t in (await client.list_tools()).tools)
    async with client.listen(tools_list_changed=True) as changes:
        first = await client.call_tool("get_note", {"note_id": "n1"})
        event = await asyncio.wait_for(anext(aiter(changes)), 30)
    after = sorted(t.name for t in (await client.list_tools()).tools)
    gone = await client.call_tool("get_note", {"note_id": "n1"})
    return before, first, event, after, gone


def _check(before, first, event, after, gone):
    assert "get_note" in before and not first.is_error, "the first call meets the tools as they were"
    assert type(event).__name__ == "ToolsListChanged"
    assert "get_note" not in after and "getNote" in after, "the new list is served after the notification"
    assert gone.is_error and "unknown_tool" in gone.content[0].text


def test_the_proxy_notifies_and_serves_the_new_list_over_stdio(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    argv = ["-m", "pytest_openagent.cli", "mcp-proxy", "--upstream", UPSTREAM, "--tasks", str(tasks), "--task", "text",
            "--perturb", "tool_name_noise:1@1"]  # fmt: skip

    async def run():
        async with Client(StdioServerParameters(command=sys.executable, args=argv)) as client:
            return await _drift(client)

    _check(*asyncio.run(run()))


@pytest.mark.slow  # the fast path over HTTP: McpAgent's per-episode proxy, below
def test_the_proxy_notifies_and_serves_the_new_list_over_http(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    process, url = proxy_process("--tasks", str(tasks), "--task", "text", "--perturb", "tool_name_noise:1@1")
    try:

        async def run():
            async with Client(url) as client:
                return await _drift(client)

        _check(*asyncio.run(run()))
    finally:
        process.terminate()
        process.wait(10)


def _spelt(name: str) -> str:
    return name.replace("_", "").replace("-", "").casefold()


HEARD: list[str] = []


def follows_changes(url: str, query: str) -> str:
    """Calls the gold plan's tools by the names listed; when a name is gone, waits for the server's
    ``notifications/tools/list_changed``, lists the tools again and calls the one spelt alike (camelCase, kebab)."""
    from clients import _task

    task = _task(query)

    async def play() -> str:
        async with Client(url) as client, client.listen(tools_list_changed=True) as changes:
            events = aiter(changes)

            async def names() -> dict[str, str]:
                return {_spelt(t.name): t.name for t in (await client.list_tools()).tools}

            listed, texts = await names(), []
            for call in task.plan:
                result = await client.call_tool(listed[_spelt(call.tool)], dict(call.args))
                if result.is_error and "unknown_tool" in result.content[0].text:
                    HEARD.append(type(await asyncio.wait_for(anext(events), 30)).__name__)
                    listed = await names()
                    result = await client.call_tool(listed[_spelt(call.tool)], dict(call.args))
                texts.append(result.content[0].text)
        return "Done: " + " | ".join(texts)

    return asyncio.run(play())


def test_an_mcp_client_hears_the_change_through_mcp_agent_and_a_brittle_one_breaks():
    from clients import BY_NAME
    from notes_domain import NOTES

    from sandbox.agents.mcp import McpAgent
    from sandbox.case import Case, run_cases
    from sandbox.perturbations import create

    sandbox.register_domain(NOTES, replace=True)
    try:
        chain = next(t for t in NOTES.listed if t.id.endswith("chain"))
        case = Case(chain, (create("tool_name_noise", severity=1, after=1),))
        HEARD.clear()
        [followed] = run_cases(McpAgent(follows_changes, name="follows-changes"), [case])
        [brittle] = run_cases(BY_NAME, [case])
    finally:
        DOMAINS.pop(NOTES.name, None)
    assert followed.success, followed.explain()
    assert HEARD == ["ToolsListChanged"], "the proxy sent the notification, once"
    assert followed.steps[0].calls[0].name == "search_notes" and followed.steps[1].results[0].error == "unknown_tool"
    assert not brittle.success and brittle.steps[1].results[0].error == "unknown_tool"


def test_an_older_client_gets_the_notification_on_its_call_stream(tmp_path):
    """A client of the handshake protocols (``mode="legacy"``) hears ``notifications/tools/list_changed`` through its
    message handler, before the result of the call that changed the list."""
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    argv = ["-m", "pytest_openagent.cli", "mcp-proxy", "--upstream", UPSTREAM, "--tasks", str(tasks), "--task", "text",
            "--perturb", "tool_name_noise:1@1"]  # fmt: skip
    heard: list[str] = []

    async def hear(message):
        heard.append(type(message).__name__)

    async def run():
        target = StdioServerParameters(command=sys.executable, args=argv)
        async with Client(target, mode="legacy", message_handler=hear) as client:
            changes = client.session.server_capabilities.tools.list_changed
            first = await client.call_tool("get_note", {"note_id": "n1"})
            heard_by_then = list(heard)
            after = sorted(t.name for t in (await client.list_tools()).tools)
            return changes, first, heard_by_then, after

    changes, first, heard_by_then, after = asyncio.run(run())
    assert changes, "the handshake says the tool list may change"
    assert not first.is_error and heard_by_then == ["ToolListChangedNotification"]
    assert "getNote" in after and "get_note" not in after
