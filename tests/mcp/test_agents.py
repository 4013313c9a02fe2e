"""Agents against an MCP server under perturbations: the oracle solves every applied solvable case (in memory,
over stdio, over HTTP), an agent that speaks MCP itself plays through the proxy, and its failure shrinks to one
perturbation; the model agent plays through ``openagent mcp-proxy``."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

import notes_server
from clients import BY_NAME
from conftest import proxy_process, stdio, write_tasks
from notes_tasks import TASKS

import sandbox
from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain
from sandbox.judge import OUTCOMES
from sandbox.perturbations import registry
from tests import toys

pytest_plugins = ["pytester"]

ISSUE_CATALOGUE = {
    "semantic_renaming", "tool_name_noise", "identity_erasure", "description_rewrite", "distractor_tools",
    "schema_noise", "runtime_error", "rate_limit", "missing_values", "format_shift", "tool_redirection",
    "missing_capability",
}  # fmt: skip
"""What issue #19 names: renames mapped back, descriptions, distractors, schema changes, errors, rate limits,
missing values, format shifts, redirection, a removed tool."""


def _every_applied_case(domain, severities="all"):
    cases = []
    for name in registry.names():
        cls = registry.get(name)
        levels = cls.severities() if severities == "all" else [cls.max_severity]
        for severity in levels:
            spec = cls(severity=severity, seed=7)
            cases += [Case(task, (spec,)) for task in domain.listed if spec.applies_to(task)]
    return cases


def _oracle_keeps_full_success(domain, severities="all"):
    sandbox.register_domain(domain, replace=True)
    try:
        cases = _every_applied_case(domain, severities)
        episodes = run_cases(OracleAgent(), cases)
    finally:
        DOMAINS.pop(domain.name, None)
    failed = [f"{c.describe()}: {e.outcome}" for c, e in zip(cases, episodes, strict=True) if not e.success]
    assert failed == []
    return {p.name for c in cases for p in c.perturbations}


@pytest.mark.parametrize("loop", ["thread", "caller"])
def test_the_oracle_solves_every_applied_perturbation_of_the_server_in_memory(loop):
    """``loop="caller"`` is how ``openagent mcp-proxy`` holds its upstream: the calling thread runs the loop."""
    domain = mcp_domain(notes_server.build(), TASKS, name=f"notes-oracle-{loop}", inspect="tool:list_notes", loop=loop)
    try:
        applied = _oracle_keeps_full_success(domain)
    finally:
        domain.close()
    assert applied >= ISSUE_CATALOGUE, ISSUE_CATALOGUE - applied


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_oracle_solves_every_applied_perturbation_over_a_real_transport(transport, notes_url):
    server = stdio() if transport == "stdio" else notes_url
    domain = mcp_domain(server, TASKS, name=f"notes-oracle-{transport}", inspect="tool:list_notes")
    try:
        assert _oracle_keeps_full_success(domain, severities="max") >= ISSUE_CATALOGUE
    finally:
        domain.close()


@pytest.fixture
def notes():
    from notes_domain import NOTES

    sandbox.register_domain(NOTES, replace=True)
    yield NOTES
    DOMAINS.pop(NOTES.name, None)


def test_an_mcp_client_plays_through_the_proxy_and_breaks_on_renamed_tools(notes):
    by_id = {t.id.removeprefix("notes-"): t for t in notes.listed}
    renamed = registry.create("tool_name_noise", severity=1)
    cases = [Case(by_id["text"]), Case(by_id["add"]), Case(by_id["share"]), Case(by_id["text"], (renamed,))]
    clean_text, clean_add, share, perturbed = run_cases(BY_NAME, cases)
    assert (clean_text.outcome, clean_add.outcome, share.outcome) == ("success", "success", "refused")
    assert clean_text.steps[0].calls[0].name == "get_note" and "milk, eggs" in clean_text.answer
    assert perturbed.steps[0].calls[0].name == "get_note" and perturbed.steps[0].results[0].error == "unknown_tool"
    assert perturbed.outcome == "wrong_refusal", "it answers with the error, which says no tool is named so"


def test_the_mcp_clients_failure_shrinks_to_one_perturbation(pytester, notes):
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.makepyfile(test_client="""
        import pytest_openagent as openagent
        from clients import BY_NAME
        from notes_domain import NOTES

        @openagent.perturb(names=["description_rewrite", "tool_name_noise"], domain=NOTES, max_stack=2,
                           max_examples=15)
        def test_survives(case):
            episode = case.run(BY_NAME)
            assert episode.success, episode.explain()
    """)  # fmt: skip
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*case=Case(notes-* [[]*, 1 calls] | tool_name_noise(s=1,eval*)*"])
    shrunk = [line for line in result.stdout.lines if "case=Case(" in line]
    assert shrunk and all(" + " not in line for line in shrunk), shrunk


@pytest.mark.slow  # torch, a tiny model and two server processes: about 30 s
def test_the_model_agent_plays_through_the_proxy(tmp_path):
    pytest.importorskip("transformers")
    from sandbox.evaluation.specs import load_agent
    from training.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    process, url = proxy_process("--perturb", "semantic_renaming:2", "--tasks", str(write_tasks(tmp_path / "t.jsonl")),
                          "--task", "text")  # fmt: skip
    try:
        task = sandbox.UserTask("What does the note n1 say?", id="text", answer={"text": "milk, eggs, rye bread"})
        # the proxy serves one episode and has no reset: its writes do not matter to this one
        domain = sandbox.register_domain(mcp_domain(url, [task], name="notes-proxied", reset="none"), replace=True)
        assert {t.name for t in domain.tools} == {"scan_notes", "retrieve_note", "insert_note", "catalog_notes"}
        episode = run_cases(load_agent(f"hf:{model}"), [Case(domain.listed[0])], max_steps=2)[0]
        assert episode.outcome in OUTCOMES and episode.outcome != "agent_error", episode.explain()
        seen = {m["name"] for m in episode.messages if m.get("role") == "tool"}
        assert seen <= {"scan_notes", "retrieve_note", "insert_note", "catalog_notes"} | {"get_note"}
    finally:
        DOMAINS.pop("notes-proxied", None)
        process.terminate()
        process.wait(10)
