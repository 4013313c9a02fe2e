"""A server that crashes, hangs or answers garbage mid-episode ends that episode as an outcome; the next
episode gets a server again."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'pytest-openagent[mcp]'")

from conftest import stdio

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


@pytest.mark.parametrize(
    ("fault", "kind", "words"),
    [("crash", "fatal", "is gone"), ("hang", "runtime_error", "hangs"), ("garbage", "runtime_error", "hangs")],
)
@pytest.mark.parametrize("loop", ["thread", "caller"])
def test_a_faulty_server_ends_the_episode_as_an_outcome_and_the_next_episode_runs(fault, kind, words, loop):
    server = stdio("--fault", fault, "--on", "get_note")
    domain = mcp_domain(server, TASKS, name=f"notes-{fault}-{loop}", timeout=2, loop=loop)
    sandbox.register_domain(domain, replace=True)
    try:
        broken, fine = run_cases(reader, [Case(t) for t in domain.listed])
        assert broken.outcome in OUTCOMES and broken.outcome == "wrong_answer"
        [result] = broken.steps[0].results
        assert result.error == kind and words in result.message, result.message
        assert fine.outcome == "success", fine.explain()
        again = run_cases(reader, [Case(domain.listed[1])])[0]
        assert again.outcome == "success", "the server came back for the next episode"
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()
