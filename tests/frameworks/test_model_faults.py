"""Framework agents meet faults of their own model: each framework's OpenAI-compatible model client pointed at
``tools.model_url(URL)``, its model the oracle behind a loopback server (tests/proxy/upstream.py), each fault
injected by the LLM proxy. What each framework's loop makes of each fault is its own behaviour, recorded here
(docs/frameworks.md has the table); what holds for all is that a faulted reply never passes for a success."""

from __future__ import annotations

import functools
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


def _langgraph(url: str, streaming: bool = False) -> LoopAgent:
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from sandbox.agents.frameworks import langchain_tools

    def run(request: str, tools: EpisodeTools) -> str:
        model = ChatOpenAI(model=MODEL, base_url=tools.model_url(url), api_key="none", streaming=streaming)
        graph = create_agent(model, langchain_tools(tools), system_prompt="Use the tools to do what the user asks.")
        state = graph.invoke({"messages": [("user", request)]}, {"recursion_limit": 40})
        return str(state["messages"][-1].content)

    return LoopAgent(run, name="langgraph-streamed-over-http" if streaming else "langgraph-over-http")


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


AGENTS = {"pydantic-ai": (_pydantic_ai, "pydantic_ai"), "openai-agents": (_openai_agents, "agents"),
          "langgraph": (_langgraph, "langchain_openai"),
          "langgraph-streamed": (functools.partial(_langgraph, streaming=True), "langchain_openai")}  # fmt: skip

S, H, P, A, R = "success", "hallucinated_success", "parse_error", "agent_error", "wrong_refusal"
EXPECTED = {
    # fault, severity: (pydantic-ai, OpenAI Agents SDK, LangGraph, LangGraph streamed); why, in docs/frameworks.md
    # a retry prompt; the SDK hands the text on; LangGraph drops the call and answers "", or streamed makes the
    # call its lenient parser closed, which the env refuses (the oracle then gives up)
    ("model_malformed_arguments", 1): (S, P, H, R),
    ("model_unknown_tool", 1): (S, A, S, S),  # a retry prompt; the SDK's ModelBehaviorError; ToolNode's error
    ("model_truncated_reply", 1): (S, P, H, R),
    ("model_empty_reply", 1): (S, H, H, H),  # the SDK and LangGraph return "" as the final output
    ("model_refusal", 1): (A, A, R, R),  # ContentFilterError; ModelRefusalError; LangGraph passes the refusal on
    ("model_false_success", 1): (H, H, H, H),  # none can tell
    ("model_rate_limited", 1): (S, S, S, S),  # the OpenAI SDK's own retries, after Retry-After
    ("model_server_error", 1): (S, S, S, S),
    ("model_server_error", 2): (A, A, A, A),  # three in a row: the OpenAI SDK's 2 retries spent
    ("model_server_error", 3): (A, A, A, A),  # an outage fails loudly
}
SLOW = {("model_rate_limited_bare", 1): (S, S, S, S), ("model_server_error_retry_after", 1): (S, S, S, S)}
"""The HTTP faults' other two forms (a second each where Retry-After asks for one): what the rows above show."""


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


@pytest.fixture(scope="module", params=[pytest.param(n, marks=pytest.mark.slow) if n.endswith("-streamed") else n
                                        for n in AGENTS])  # fmt: skip
def framework(request, server, task):
    build, module = AGENTS[request.param]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")
    agent = build(server.url)
    [clean] = run_cases(agent, [Case(task)])
    assert clean.success and clean.model_faults is None, clean.explain()
    return request.param, agent


@pytest.mark.parametrize(("name", "severity"), [*EXPECTED, *(pytest.param(*k, marks=pytest.mark.slow) for k in SLOW)])
def test_each_framework_meets_each_fault_as_its_loop_handles_it(framework, task, name, severity):
    which, agent = framework
    [episode] = run_cases(agent, [Case(task, (registry.create(name, severity=severity),))])
    expected = {**EXPECTED, **SLOW}[name, severity][list(AGENTS).index(which)]
    assert episode.outcome == expected, episode.explain()
    faults = episode.model_faults
    assert faults["injected"] and faults["injected"][0]["fault"] == name
    if episode.success:
        assert faults["asked_again"], "a success after a fault: the loop asked its model again"
    if faults["final_faulted"]:
        assert not episode.success, "a faulted reply taken as the answer is never a success"


@pytest.mark.parametrize("name", ["model_malformed_arguments", "model_truncated_reply"])
def test_a_streaming_langgraph_makes_the_cut_call_whole_and_calls_it(server, task, name):
    """Streamed, langchain-openai reads a call's arguments with a lenient JSON parser: the cut text is closed into
    arguments the model never wrote, and the graph makes that call (the env finds a required argument missing),
    where the same graph not streaming drops the call and returns an empty answer."""
    pytest.importorskip("langchain_openai")
    agent = _langgraph(server.url, streaming=True)
    [clean] = run_cases(agent, [Case(task)])
    assert clean.success, clean.explain()
    [episode] = run_cases(agent, [Case(task, (registry.create(name),))])
    made, meant = episode.steps[0].calls[0], clean.steps[0].calls[0]
    assert made.name == meant.name and made.arguments != meant.arguments, episode.explain()
    assert episode.steps[0].results[0].error == "invalid_arguments", episode.explain()
    assert episode.model_faults["asked_again"] and not episode.success
