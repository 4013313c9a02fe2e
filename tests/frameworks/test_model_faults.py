"""Framework agents meet faults of their own model: each framework's OpenAI-compatible model client pointed at
``tools.model_url(URL)``, its model the oracle behind a loopback server (tests/proxy/upstream.py), each fault
injected by the LLM proxy. What each framework's loop makes of each fault is its own behaviour, recorded here
(docs/frameworks.md has the table); what holds for all is that a faulted reply never passes for a success."""

from __future__ import annotations

import importlib.util

import pytest

import sandbox
from sandbox.agents import EpisodeTools, LoopAgent
from sandbox.case import Case, run_cases
from sandbox.perturbations import registry
from tests.proxy.upstream import MODEL, OracleServer

pytest.importorskip("starlette", reason="needs the mcp extra (starlette, uvicorn)")


def _pydantic_ai(url: str) -> LoopAgent:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from sandbox.agents.frameworks import pydantic_ai_toolset

    assistant = Agent(instructions="Use the tools to do what the user asks. Answer briefly.")

    def run(request: str, tools: EpisodeTools) -> str:
        provider = OpenAIProvider(base_url=tools.model_url(url), api_key="none")
        model = OpenAIChatModel(MODEL, provider=provider)
        return assistant.run_sync(request, model=model, toolsets=[pydantic_ai_toolset(tools)]).output

    return LoopAgent(run, name="pydantic-ai-over-http")


def _openai_agents(url: str) -> LoopAgent:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
    from openai import AsyncOpenAI

    from sandbox.agents.frameworks import openai_agents_tools

    assistant = Agent(name="assistant", instructions="Use the tools to do what the user asks. Answer briefly.")

    def run(request: str, tools: EpisodeTools) -> str:
        client = AsyncOpenAI(base_url=tools.model_url(url), api_key="none")
        agent = assistant.clone(model=OpenAIChatCompletionsModel(MODEL, client), tools=openai_agents_tools(tools))
        result = Runner.run_sync(agent, request, max_turns=20, run_config=RunConfig(tracing_disabled=True))
        return str(result.final_output)

    return LoopAgent(run, name="agents-sdk-over-http")


AGENTS = {"pydantic-ai": (_pydantic_ai, "pydantic_ai"), "openai-agents": (_openai_agents, "agents")}

EXPECTED = {
    # fault, severity: (pydantic-ai, OpenAI Agents SDK)
    ("model_malformed_arguments", 1): ("success", "parse_error"),  # a retry prompt; the SDK hands the text on
    ("model_unknown_tool", 1): ("success", "agent_error"),  # a retry prompt; the SDK's ModelBehaviorError
    ("model_truncated_reply", 1): ("success", "parse_error"),
    ("model_empty_reply", 1): ("success", "hallucinated_success"),  # the SDK returns "" as the final output
    ("model_refusal", 1): ("agent_error", "agent_error"),  # ContentFilterError; ModelRefusalError
    ("model_false_success", 1): ("hallucinated_success", "hallucinated_success"),  # neither can tell
    ("model_rate_limited", 1): ("success", "success"),  # the OpenAI SDK's own retries
    ("model_server_error", 1): ("success", "success"),
    ("model_server_error", 2): ("agent_error", "agent_error"),  # three in a row: the OpenAI SDK's 2 retries spent
    ("model_server_error", 3): ("agent_error", "agent_error"),  # an outage fails loudly
}


@pytest.fixture(scope="module")
def server():
    server = OracleServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def task(server):
    task = next(t for t in sandbox.tasks("poi", "test", n=8, seed=1) if t.n_calls >= 2 and t.solvable)
    server.brief([task])
    return task


@pytest.fixture(scope="module", params=list(AGENTS))
def framework(request, server, task):
    build, module = AGENTS[request.param]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")
    agent = build(server.url)
    [clean] = run_cases(agent, [Case(task)])
    assert clean.success and clean.model_faults is None, clean.explain()
    return request.param, agent


@pytest.mark.parametrize(("name", "severity"), list(EXPECTED))
def test_each_framework_meets_each_fault_as_its_loop_handles_it(framework, task, name, severity):
    which, agent = framework
    [episode] = run_cases(agent, [Case(task, (registry.create(name, severity=severity),))])
    expected = EXPECTED[name, severity][list(AGENTS).index(which)]
    assert episode.outcome == expected, episode.explain()
    faults = episode.model_faults
    assert faults["injected"] and faults["injected"][0]["fault"] == name
    if episode.success:
        assert faults["asked_again"], "a success after a fault: the loop asked its model again"
    if faults["final_faulted"]:
        assert not episode.success, "a faulted reply taken as the answer is never a success"
