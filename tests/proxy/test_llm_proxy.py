"""The LLM proxy end to end: an ``openai:`` agent (the sandbox's loop as its harness) whose model is the oracle
behind a loopback server, each case's model faults injected on the way back; streaming through the proxy with
the OpenAI SDK; ``openagent llm-proxy``'s misuse."""

from __future__ import annotations

import json

import pytest

import sandbox
from sandbox.agents import LoopAgent, OracleAgent
from sandbox.agents.openai import OpenAIAgent
from sandbox.case import Case, run_cases
from sandbox.errors import UsageError
from sandbox.perturbations import registry
from tests.commands import openagent
from tests.loopback import LoopbackServer
from tests.proxy.upstream import MODEL, OracleServer

pytest.importorskip("starlette", reason="needs the mcp extra (starlette, uvicorn)")


@pytest.fixture(scope="module")
def server():
    server = OracleServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def tasks(server):
    tasks = [t for t in sandbox.tasks("poi", "test", n=8, seed=1) if t.plan and t.solvable][:3]
    server.brief(tasks)
    return tasks


def _outcomes(agent, tasks, name, severity=1, after=0):
    fault = registry.create(name, severity=severity, after=after)
    return run_cases(agent, [Case(t, (fault,)) for t in tasks])


EXPECTED = {
    # the sandbox's own loop is the openai: agent's harness: it reads what the model said, and retries HTTP
    ("model_rate_limited", 1): "success",
    ("model_rate_limited_bare", 1): "success",
    ("model_server_error", 1): "success",
    ("model_server_error_retry_after", 1): "success",
    ("model_server_error", 2): "success",  # three failures in a row, within OpenAIAgent's retries (3 here)
    ("model_server_error", 3): "agent_error",  # an outage fails loudly
    ("model_unknown_tool", 1): "success",  # the env says the tool does not exist; the model calls the right one
    ("model_malformed_arguments", 1): "parse_error",  # the loop does not hand a bad call back to the model
    ("model_truncated_reply", 1): "parse_error",
    ("model_refusal", 1): "wrong_refusal",
    ("model_empty_reply", 1): "hallucinated_success",  # an empty reply taken as the answer: a false success
    ("model_false_success", 1): "hallucinated_success",
}


@pytest.mark.parametrize(("name", "severity"), list(EXPECTED))
def test_an_openai_agent_meets_each_fault_as_its_harness_handles_it(server, tasks, name, severity):
    agent = OpenAIAgent(MODEL, server.url, backoff=0.01, retries=3)
    assert [e.outcome for e in run_cases(agent, [Case(t) for t in tasks])] == ["success"] * len(tasks)
    episodes = _outcomes(agent, tasks, name, severity)
    assert [e.outcome for e in episodes] == [EXPECTED[name, severity]] * len(tasks), episodes[0].explain()
    for episode in episodes:
        assert episode.model_faults["injected"] and episode.model_faults["injected"][0]["fault"] == name
    if EXPECTED[name, severity] == "success":
        assert all(e.model_faults["asked_again"] for e in episodes), "recovered: the harness asked its model again"


def test_the_onset_spares_the_turns_before_it(server, tasks):
    agent = OpenAIAgent(MODEL, server.url, backoff=0.01)
    episodes = _outcomes(agent, tasks, "model_false_success", after=1)
    for episode in episodes:
        assert [e["turn"] for e in episode.model_faults["injected"]] == [1]
        assert episode.steps[0].calls and episode.outcome == "hallucinated_success"


def test_the_proxy_forgets_an_episode_once_it_ends(server, tasks):
    from sandbox.proxy.llm_serve import local_proxy

    agent = OpenAIAgent(MODEL, server.url, backoff=0.01)
    _outcomes(agent, tasks, "model_refusal")
    assert local_proxy(server.url).proxy.routes == {} and agent._routes == {}


def test_an_agent_without_a_model_over_http_cannot_take_model_faults(tasks):
    with pytest.raises(UsageError, match="openai: agent, or a LoopAgent"):
        run_cases(OracleAgent(), [Case(tasks[0], (registry.create("model_refusal"),))])


def test_a_loop_agent_that_never_asks_for_its_models_url_fails_its_episode(tasks):
    agent = LoopAgent(lambda request, tools: "done", name="no-model-url")
    [episode] = run_cases(agent, [Case(tasks[0], (registry.create("model_refusal"),))])
    assert episode.outcome == "agent_error" and "tools.model_url" in episode.steps[-1].error


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_sdk_reads_a_faulted_reply_streamed_or_not(server, tasks, stream):
    openai = pytest.importorskip("openai", reason="needs the dev extra")
    from sandbox.proxy.llm import LlmProxy
    from sandbox.proxy.llm_serve import ProxyThread

    faults = (registry.create("model_unknown_tool", severity=3),)
    messages = [{"role": "user", "content": tasks[0].query}]
    tools = Case(tasks[0]).env().tool_specs()
    with ProxyThread(LlmProxy(server.url, faults)) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key="none", max_retries=0)
        got = client.chat.completions.create(model=MODEL, messages=messages, tools=tools, stream=stream)
        if stream:
            names = "".join(d.function.name or "" for c in got for d in (c.choices[0].delta.tool_calls or [])
                            if c.choices and d.function)  # fmt: skip
        else:
            names = got.choices[0].message.tool_calls[0].function.name
        clean = openai.OpenAI(base_url=server.url, api_key="none").chat.completions.create(
            model=MODEL, messages=messages, tools=tools)  # fmt: skip
    assert names == clean.choices[0].message.tool_calls[0].function.name + "_v2"


def test_a_stream_with_no_fault_due_passes_through(server, tasks):
    openai = pytest.importorskip("openai", reason="needs the dev extra")
    from sandbox.proxy.llm import LlmProxy
    from sandbox.proxy.llm_serve import ProxyThread

    messages = [{"role": "user", "content": tasks[0].query}]
    tools = Case(tasks[0]).env().tool_specs()
    with ProxyThread(LlmProxy(server.url, (registry.create("model_refusal", after=5),))) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key="none", max_retries=0)
        chunks = list(client.chat.completions.create(model=MODEL, messages=messages, tools=tools, stream=True))
        listed = client.models.list().data
    assert chunks[-1].choices[0].finish_reason == "tool_calls" and [m.id for m in listed] == [MODEL]


def test_a_path_names_the_faults_of_its_conversations(server, tasks):
    openai = pytest.importorskip("openai", reason="needs the dev extra")
    from sandbox.proxy.llm import LlmProxy
    from sandbox.proxy.llm_serve import ProxyThread

    messages = [{"role": "user", "content": tasks[0].query}]
    told: list[str] = []
    with ProxyThread(LlmProxy(server.url, log=told.append)) as proxy:
        root = proxy.url.removesuffix("/v1")
        refused = openai.OpenAI(base_url=f"{root}/f/model_refusal:3/v1", api_key="none", max_retries=0)
        assert refused.chat.completions.create(model=MODEL, messages=messages).choices[0].message.refusal
        clean = openai.OpenAI(base_url=proxy.url, api_key="none", max_retries=0)
        assert not clean.chat.completions.create(model=MODEL, messages=messages).choices[0].message.refusal
        typo = openai.OpenAI(base_url=f"{root}/f/model_refusl/v1", api_key="none", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="Did you mean 'model_refusal'"):
            typo.chat.completions.create(model=MODEL, messages=messages)
    assert told == ["model_refusal at turn 0 (model_refusal), request 1 of its conversation"]


def test_llm_proxy_misuse_is_one_line_that_names_the_fix(server, tmp_path):
    typo = openagent("llm-proxy", "--upstream", server.url, "--fault", "model_refusl", cwd=tmp_path)
    assert typo.returncode == 2 and "Did you mean 'model_refusal'?" in typo.stderr
    assert typo.stderr.strip().splitlines()[-1].startswith("openagent llm-proxy: error: --fault")
    not_openai = LoopbackServer(lambda method, path, body: (200, {}, {"status": "ok"}))
    try:
        root = not_openai.url.removesuffix("/v1")
        wrong = openagent("llm-proxy", "--upstream", root, cwd=tmp_path)
    finally:
        not_openai.close()
    assert wrong.returncode == 2 and f"its base URL is probably {root}/v1" in wrong.stderr
    dead = openagent("llm-proxy", "--upstream", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert dead.returncode == 4 and len(dead.stderr.strip().splitlines()) == 1 and "no answer" in dead.stderr


def test_openagent_eval_injects_named_model_faults_into_an_openai_agent(tmp_path):
    every = OracleServer()
    try:
        every.brief(list(sandbox.tasks("poi", "test")))
        names = "model_rate_limited,model_false_success"
        run = openagent("eval", "--agent", f"openai:{MODEL}@{every.url}", "--tiers", "interaction", "--names", names,
                        "--n", "4", "--no-cache", "--json", str(tmp_path / "r.json"), cwd=tmp_path)  # fmt: skip
    finally:
        every.close()
    assert run.returncode == 0, run.stderr
    table = run.stdout[: run.stdout.index("success against severity")]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith("  model_")}
    assert set(rows) <= set(names.split(",")) and rows, run.stdout
    if "model_false_success" in rows:
        assert rows["model_false_success"][3] == "0.0%", run.stdout
    detection = run.stdout[run.stdout.index("noticed apart from recovered") :]
    assert all(name in detection for name in rows), run.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    by_name = {d["name"]: d for d in report["detection"]}
    assert by_name.get("model_false_success", {"noticed": {"k": 0}})["noticed"]["k"] == 0


FRAMEWORK_AGENT = """
import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from sandbox.agents import EpisodeTools, LoopAgent
from sandbox.agents.frameworks import pydantic_ai_toolset

URL = os.environ["ORACLE_URL"]
ASSISTANT = Agent(instructions="Use the tools to do what the user asks. Answer briefly.")


def run(request: str, tools: EpisodeTools) -> str:
    model = OpenAIChatModel("oracle", provider=OpenAIProvider(base_url=tools.model_url(URL), api_key="none"))
    return ASSISTANT.run_sync(request, model=model, toolsets=[pydantic_ai_toolset(tools)]).output


AGENT = LoopAgent(run, name="pydantic-ai-assistant")
"""


def test_openagent_eval_injects_model_faults_into_a_framework_agent(tmp_path):
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    (tmp_path / "my_agents.py").write_text(FRAMEWORK_AGENT)
    every = OracleServer()
    try:
        every.brief(list(sandbox.tasks("poi", "test")))
        run = openagent("eval", "--agent", "my_agents:AGENT", "--tiers", "interaction", "--names",
                        "model_empty_reply,model_false_success", "--n", "4", "--no-cache", cwd=tmp_path,
                        env={"ORACLE_URL": every.url, "PYTHONPATH": str(tmp_path)})  # fmt: skip
    finally:
        every.close()
    assert run.returncode == 0, run.stderr
    table = run.stdout[: run.stdout.index("success against severity")]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith("  model_")}
    assert rows and set(rows) <= {"model_empty_reply", "model_false_success"}, run.stdout
    assert rows.get("model_false_success", ["", "", "", "0.0%"])[3] == "0.0%", run.stdout
    assert "noticed apart from recovered" in run.stdout
