"""The OpenAI-compatible agent against a local fake server."""

import json

import pytest

import sandbox
from sandbox.agents.openai import OpenAIAgent, to_openai_messages
from sandbox.case import Case
from sandbox.evaluation.specs import load_agent


def test_messages_go_over_the_wire_in_openai_format():
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "name": "f", "content": '{"ok": 1}'},
    ]
    wire = to_openai_messages(messages)
    call = wire[2]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["arguments"] == '{"a": 1}'
    assert "content" not in wire[2]  # not null: llama-cpp-python's server refuses an assistant message with one
    assert wire[3] == {"role": "tool", "tool_call_id": call["id"], "content": '{"ok": 1}'}


@pytest.fixture
def server(serve):
    """Answers like an OpenAI server driven by the oracle; the first request for a reply gets a 429."""

    def respond(method, path, body):
        if method != "POST":
            return 404, {}, {"error": "not found"}
        if len(_posts(server)) == 1:
            return 429, {"Retry-After": "0"}, {}
        if not [m for m in body["messages"] if m["role"] == "tool"]:
            call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": "I cannot do that."}
        return 200, {}, {"choices": [{"message": message}]}

    server = serve(respond)
    return server


def _posts(server):
    return [(headers, body) for method, _, headers, body in server.seen if method == "POST"]


def test_openai_agent_retries_sends_tools_and_reads_structured_calls(server, monkeypatch):
    monkeypatch.setenv("OPENAGENT_API_KEY", "sk-secret-123")
    agent = load_agent(f"openai:tiny@{server.url}")
    agent.backoff = 0.01
    task = sandbox.tasks("poi", "test")[0]
    episode = Case(task).run(agent)
    assert episode.steps[0].calls[0].name == "get_weather"
    assert episode.answer == "I cannot do that."
    headers, body = _posts(server)[-1]
    assert headers["Authorization"] == "Bearer sk-secret-123"
    assert body["model"] == "tiny" and body["tools"] and body["messages"][-1]["tool_call_id"] == "c1"
    assert len(_posts(server)) == 3  # one 429, then two turns
    for text in (repr(agent), agent.fingerprint(), json.dumps(vars(agent), default=repr)):
        assert "sk-secret" not in text


def test_openai_agent_fails_one_episode_not_the_batch_when_unreachable():
    agent = OpenAIAgent("m", "http://127.0.0.1:9/v1", retries=0, timeout=1)
    tasks = sandbox.tasks("poi", "test", n=2)
    episodes = sandbox.run_episodes(agent, [Case(t).env() for t in tasks])
    assert [e.outcome for e in episodes] == ["agent_error", "agent_error"]
    assert "unreachable" in episodes[0].steps[0].error
