"""A checkpoint written by ``openagent gguf``, served by llama.cpp's OpenAI-compatible server, driven by the
``openai:`` agent and by ``openagent eval``: the engine's greedy replies are the in-process ``hf:`` agent's.

Needs the ``serve`` extra, which builds llama.cpp from source (docs/serving.md); CI leaves it out.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip(
    "llama_cpp", reason="llama.cpp's server is not installed: pip install -e '.[serve]' (builds llama.cpp; see docs)"
)
pytest.importorskip("uvicorn", reason="llama.cpp's server needs its [server] extra: pip install -e '.[serve]'")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tiny_base, tmp_path_factory):
    from training.gguf_export import write_gguf
    from training.serving import llama_cpp_server

    gguf = write_gguf(tiny_base, tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    with llama_cpp_server(gguf, alias="tiny", threads=2) as url:
        yield url


def test_the_engine_gives_the_in_process_agents_greedy_replies(tiny_base, served):
    import sandbox
    from sandbox import make_env, run_episodes
    from sandbox.agents.openai import OpenAIAgent
    from training.inference.model_agent import HFAgent

    remote = OpenAIAgent("tiny", served, max_tokens=16)
    local = HFAgent(tiny_base, max_new_tokens=16, dtype="fp32")
    tasks = sandbox.tasks("poi", "test", 6)
    through_server = run_episodes(remote, [make_env("poi", t) for t in tasks])
    direct = run_episodes(local, [make_env("poi", t) for t in tasks])
    assert all(ep.outcome != "agent_error" for ep in through_server), [ep.steps[-1].error for ep in through_server]

    def text(reply: str) -> str:  # the server decodes without special tokens; HFAgent keeps them
        for token in local.tokenizer.all_special_tokens:
            reply = reply.replace(token, "")
        return reply

    pairs = [(a.steps[0].reply, text(b.steps[0].reply)) for a, b in zip(through_server, direct, strict=True)]
    # llama.cpp's kernels round otherwise than torch's: a random model's near-ties can tip a later token, never
    # the start of every reply (a wrong template, weights or tokenizer would change them all from the first)
    assert all(ours.split()[:1] == theirs.split()[:1] for ours, theirs in pairs), pairs
    assert sum(ours == theirs for ours, theirs in pairs) >= len(pairs) // 2, pairs
    said = remote.server_report()
    assert said["models"][0]["id"] == "tiny" and said["server"]  # llama-cpp-python serves on uvicorn
    assert said["in_flight"]["requests"] >= len(tasks)


def test_openagent_eval_runs_through_the_engine_and_reports_what_it_said(served, tmp_path):
    from tests.commands import openagent

    result = openagent(
        "eval", "--agent", f"openai:tiny@{served}", "--tiers", "1", "--n", "2", "--no-cache",
        "--json", str(tmp_path / "report.json"), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "report.json").read_text())["meta"]
    assert meta["server"]["models"][0]["id"] == "tiny" and meta["server"]["in_flight"]["adaptive"] is True


def test_the_engine_takes_a_conversation_with_tool_calls_and_results(served):
    """The second turn of a tool-using episode: the assistant's call (no text) and the tool's result."""
    from sandbox.agent import RequestFailed, Turn
    from sandbox.agents.openai import OpenAIAgent

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]  # fmt: skip
    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather",
                                                                     "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "name": "get_weather", "content": '{"sky": "clear"}'},
    ]  # fmt: skip
    [reply] = OpenAIAgent("tiny", served, max_tokens=8).act([Turn("ep", messages, tools)])
    assert not isinstance(reply, RequestFailed), reply.error
