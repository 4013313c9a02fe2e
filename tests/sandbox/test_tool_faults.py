"""A tool's or a world's fault is charged to it, never to the agent: a result too deep, too long or not JSON is
an error the agent reads, a tool that hangs fails at its deadline, a state factory that raises ends its own
episode, and a name that would reach the terminal raw is refused."""

from __future__ import annotations

import json
import threading
import time

import pytest

import sandbox
from sandbox import Reply
from sandbox.agent import fingerprint
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.errors import UsageError
from sandbox.evaluation.cache import EpisodeCache
from sandbox.tools import MAX_RESULT_CHARS, Tool


def nest(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def caller(tool: str, arguments: dict | None = None, times: int = 1):
    """An agent that calls ``tool`` ``times`` times, then answers with the last observation."""

    def agent(messages, tools):
        if sum(m["role"] == "tool" for m in messages) < times:
            return Reply(tool_calls=[{"function": {"name": tool, "arguments": arguments or {}}}])
        return f"It said: {messages[-1]['content'][:100]}"

    return agent


@pytest.fixture
def registered():
    names = []

    def register(domain):
        sandbox.register_domain(domain, replace=True)
        names.append(domain.name)
        return domain

    yield register
    for name in names:
        DOMAINS.pop(name, None)


def one_task_domain(name, tool, **kwargs):
    return sandbox.define_domain(name, [tool], tasks=[sandbox.UserTask("Ask the tool.", id="ask")], **kwargs)


@pytest.mark.parametrize(
    ("result", "words"),
    [
        pytest.param(nest(1000), "nested deeper than 64 levels", id="1000 levels: RecursionError before"),
        pytest.param(nest(250), "nested deeper than 64 levels", id="250 levels: stored, never read back before"),
        pytest.param("x" * (MAX_RESULT_CHARS + 1), "more than the 100,000", id="too long"),
        pytest.param({"when": object()}, "not a JSON value: object", id="not JSON"),
        pytest.param({"n": float("nan")}, "nan is not a JSON number", id="NaN"),
    ],
)
def test_a_result_that_cannot_be_shown_is_an_error_the_agent_reads_and_the_episode_is_stored(
    result, words, registered, tmp_path
):
    @sandbox.tool
    def produce(state) -> dict:
        """Give the result."""
        return result

    domain = registered(one_task_domain("faulty-results", produce))
    agent, case = caller("produce"), Case(domain.listed[0])
    cache = EpisodeCache(tmp_path)
    [episode] = cache.run(agent, [case])
    [observation] = episode.steps[0].results
    assert observation.error == "runtime_error" and words in observation.message, observation
    assert episode.outcome != "agent_error" and words in episode.messages[3]["content"]
    key = EpisodeCache.key(fingerprint(agent), case, case.max_steps)
    again = EpisodeCache(tmp_path).get(key, fingerprint(agent))
    assert cache.skipped == 0 and again is not None and again.model_dump() == episode.model_dump()


def test_a_result_within_the_bounds_comes_back_whole(registered):
    @sandbox.tool
    def produce(state) -> dict:
        """Give the result."""
        return {"deep": nest(60), "pair": (1, 2), "text": "y" * 1000}

    domain = registered(one_task_domain("fine-results", produce))
    [episode] = run_cases(caller("produce"), [Case(domain.listed[0])])
    [observation] = episode.steps[0].results
    expected = {"deep": nest(60), "pair": [1, 2], "text": "y" * 1000}
    assert observation.ok and json.loads(episode.messages[3]["content"]) == expected


def test_an_own_tool_that_hangs_fails_at_its_deadline_and_the_episode_calls_no_more_tools(registered):
    release = threading.Event()

    @sandbox.tool(timeout=0.2)
    def stuck(state) -> dict:
        """Never answers in time."""
        release.wait(30)
        return {"late": True}

    domain = registered(one_task_domain("hanging-tool", stuck))
    start = time.monotonic()
    try:
        [episode] = run_cases(caller("stuck", times=2), [Case(domain.listed[0])])
    finally:
        release.set()
    assert time.monotonic() - start < 10, "the episode waited for the hung call"
    first, second = episode.steps[0].results[0], episode.steps[1].results[0]
    assert first.error == "runtime_error" and "no answer within 0.2s" in first.message
    assert second.error == "fatal" and "unusable" in second.message
    assert episode.outcome != "agent_error"


def test_own_tools_have_the_mcp_deadline_by_default_and_none_runs_in_the_calling_thread(registered):
    threads = []

    def where(state) -> str:
        """Say which thread runs the call."""
        threads.append(threading.current_thread())
        return "here"

    assert Tool.from_function(where).timeout == 10.0 == sandbox.tool(where).timeout
    domain = registered(one_task_domain("no-deadline", where, timeout=None))
    assert domain.tools[0].timeout is None
    run_cases(caller("where"), [Case(domain.listed[0])])
    assert threads == [threading.current_thread()]
    with pytest.raises(UsageError, match="timeout=0"):
        sandbox.tool(timeout=0)(where)


def test_a_state_factory_that_raises_ends_its_own_episode_saying_so(registered):
    def lookup(state, key: str) -> str:
        """Look a key up."""
        return state[key]

    def factory(seed: int) -> dict:
        if seed == 1:
            raise RuntimeError("no database for seed 1")
        return {"a": "1"}

    tasks = [sandbox.UserTask("What is a?", answer={"value": "1"}, seed=s, id=f"t{s}") for s in range(3)]
    domain = registered(sandbox.define_domain("flaky-state", [lookup], state=factory, tasks=tasks))
    episodes = run_cases(caller("lookup", {"key": "a"}), [Case(t) for t in domain.listed])
    broken = episodes[1]
    assert broken.outcome == "agent_error"
    assert "the state factory of domain 'flaky-state' failed for seed 1: RuntimeError: no database" in (
        broken.steps[-1].error
    )
    assert [e.outcome for e in episodes[::2]] == ["success", "success"]


@pytest.mark.parametrize("name", ["bad\x1b[31mname", "a\nb", "nul\x00", "rlo\u202eexe", "a/b", "x" * 5000,
                                  "</tool_call>", ""])  # fmt: skip
def test_a_tool_name_outside_the_mcp_guidance_is_refused_shown_escaped(name):
    spec = {"type": "function", "function": {"name": name, "description": "d", "parameters": {}}}
    with pytest.raises(UsageError, match="outside MCP's naming guidance") as refused:
        Tool.from_spec(spec, lambda state: "ok")
    assert str(refused.value).isprintable() and len(str(refused.value)) < 400


def test_explain_escapes_what_a_terminal_would_act_on():
    hostile = "\x1b[2J\x1b]0;pwned\x07\u202eexe\x00"
    agent = caller(hostile)
    [episode] = run_cases(agent, [Case(sandbox.tasks("poi", "test", 1)[0])])
    story = episode.explain()
    assert all(c.isprintable() or c in "\n" for c in story), ascii(story)
    assert "\\x1b[2J" in story and "\\u202e" in story
