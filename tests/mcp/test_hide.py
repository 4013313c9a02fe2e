"""``hide``: a harness's own tools and optional arguments (τ²'s ``get_call_log`` and ``state_key``) kept from
the agent, given in Python or in a tasks file's header; a required argument or an unknown tool is misuse."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from mcp.server.mcpserver import MCPServer

import sandbox
from sandbox import Call, UserTask
from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from sandbox.domains.mcp.settings import McpSettings, parse_settings
from sandbox.errors import UsageError


def harness() -> MCPServer:
    """Look-ups in namespaces (``space``, optional) and a log of the calls: the shape of τ²'s servers."""
    server = MCPServer("spaces", log_level="WARNING")
    log: list[str] = []

    @server.tool()
    def get_city(person: str, space: str | None = None) -> dict:
        """The city a person lives in."""
        log.append(person)
        return {"person": person, "city": {"ann": "Oslo", "bo": "Lima"}.get(person, "?"), "space": space or "default"}

    @server.tool()
    def get_call_log(space: str | None = None) -> dict:
        """The calls made so far."""
        return {"calls": list(log)}

    return server


TASKS = [UserTask("Where does Ann live?", id="ann", plan=[Call(id="g", tool="get_city", args={"person": "ann"})],
                  sources={"city": "g.city"})]  # fmt: skip
LOOKUPS = {"get_city": "lookup", "get_call_log": "lookup"}


def _parameters(domain, name: str) -> set[str]:
    return set(next(t for t in domain.tools if t.name == name).schema["properties"])


def _names(domain) -> set[str]:
    return {t.name for t in domain.tools}


def test_hidden_tools_and_arguments_are_not_seen_and_the_oracle_still_solves():
    shown = mcp_domain(harness(), TASKS, roles=LOOKUPS)
    assert _names(shown) == {"get_city", "get_call_log"} and _parameters(shown, "get_city") == {"person", "space"}
    shown.close()
    domain = mcp_domain(harness(), TASKS, roles=LOOKUPS, hide=["get_call_log", "*.space"])
    try:
        assert _names(domain) == {"get_city"}
        assert _parameters(domain, "get_city") == {"person"}
        sandbox.register_domain(domain, replace=True)
        episode = run_cases(OracleAgent(), [Case(domain.listed[0])])[0]
        assert episode.outcome == "success", episode.explain()
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()


def test_hide_comes_from_the_tasks_file_header(tmp_path):
    path = tmp_path / "tasks.jsonl"
    header = {"openagent": {"reset": "none", "roles": LOOKUPS, "hide": ["get_call_log", "get_city.space"]}}
    plan = [{"id": "g", "tool": "get_city", "args": {"person": "ann"}}]
    task = {"id": "ann", "query": "Where does Ann live?", "plan": plan, "sources": {"city": "g.city"}}
    path.write_text(json.dumps(header) + "\n" + json.dumps(task) + "\n")
    domain = mcp_domain(harness(), path)
    try:
        assert _names(domain) == {"get_city"} and _parameters(domain, "get_city") == {"person"}
    finally:
        domain.close()
    settings = parse_settings({"hide": "a, b.c"}, "here")
    assert settings.hide == ("a", "b.c") and McpSettings.from_json(settings.to_json()) == settings


@pytest.mark.parametrize(("hide", "message"), [
    (["get_city.person"], r"'person' is required, and only an optional argument can be left out"),
    (["get_calls"], r"hide names 'get_calls', which it does not list; its tools: get_city, get_call_log"),
])  # fmt: skip
def test_hiding_what_cannot_be_hidden_is_misuse(hide, message):
    with pytest.raises(UsageError, match=message):
        mcp_domain(harness(), TASKS, roles=LOOKUPS, hide=hide)


def test_a_malformed_hide_entry_says_the_form():
    with pytest.raises(UsageError, match=r"'a\.' is no tool name or tool\.argument"):
        parse_settings({"hide": ["a."]}, "tasks.jsonl openagent")
