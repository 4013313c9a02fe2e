"""The LLM proxy in front of a real engine: ``transformers serve`` serving the default base (SmolLM2-135M-Instruct).
A streamed reply passes through as the engine sent it; a faulted one reaches the OpenAI SDK as a stream that
stops for length; an ``openai:`` agent's episodes go through the proxy, a 429 retried to the engine."""

from __future__ import annotations

import pytest

import sandbox
from sandbox.agents.openai import OpenAIAgent
from sandbox.case import Case, run_cases
from sandbox.perturbations import registry
from training.serving import transformers_server

pytestmark = pytest.mark.slow

for _module, _extra in (("torch", "train"), ("fastapi", "dev"), ("uvicorn", "dev"), ("openai", "dev"),
                        ("starlette", "mcp")):  # fmt: skip
    pytest.importorskip(_module, reason=f"needs the {_extra} extra")


@pytest.fixture(scope="module")
def served():
    from training.inference.base import BaseModelUnavailable, prepare_default_base

    try:
        base = prepare_default_base(quiet=True)
    except BaseModelUnavailable as exc:
        pytest.skip(str(exc))
    with transformers_server(base) as url:  # ready once it answers GET /v1/models, waited for while it moves
        yield str(base), url


def test_streams_pass_through_and_a_faulted_stream_stops_for_length(served):
    import openai

    from sandbox.proxy.llm import LlmProxy
    from sandbox.proxy.llm_serve import ProxyThread, check_upstream

    model, url = served
    assert check_upstream(url) == url
    messages = [{"role": "user", "content": "Say hello in five words."}]
    faults = (registry.create("model_truncated_reply", after=1),)  # from the second completion of a conversation
    with ProxyThread(LlmProxy(url, faults)) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key="none", timeout=900, max_retries=0)
        first = list(client.chat.completions.create(model=model, messages=messages, max_tokens=16, stream=True,
                                                    temperature=0.0))  # fmt: skip
        said = "".join(c.choices[0].delta.content or "" for c in first if c.choices)
        assert said.strip() and first[-1].choices[0].finish_reason in ("stop", "length")
        again = [*messages, {"role": "assistant", "content": said}, {"role": "user", "content": "Once more."}]
        cut = list(client.chat.completions.create(model=model, messages=again, max_tokens=16, stream=True,
                                                  temperature=0.0))  # fmt: skip
    assert [c.choices[0].finish_reason for c in cut if c.choices and c.choices[0].finish_reason] == ["length"]


def test_an_openai_agents_episode_goes_through_the_proxy_to_the_engine(served):
    model, url = served
    agent = OpenAIAgent(model, url, max_tokens=32, timeout=900, backoff=0.05)
    task = sandbox.tasks("poi", "test", n=1)[0]
    [limited, claimed] = run_cases(agent, [Case(task, (registry.create("model_rate_limited"),)),
                                           Case(task, (registry.create("model_false_success"),))])  # fmt: skip
    assert limited.outcome in sandbox.OUTCOMES and limited.outcome != "agent_error", limited.explain()
    assert limited.model_faults["asked_again"] and limited.steps[0].reply is not None
    assert claimed.outcome == "hallucinated_success" and claimed.model_faults["final_faulted"], claimed.explain()
