import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import Episode, OracleAgent, Reply, ScriptedAgent, make_env, run_episodes
from sandbox.judge import OUTCOMES
from sandbox.parse import parse_reply

TASKS = sandbox.tasks("poi", "test", 60)


def test_parse_several_hermes_calls_and_the_text_around_them():
    parsed = parse_reply(
        'Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>'
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert parsed.text == "Let me look." and parsed.error is None


def test_parse_an_unclosed_call_at_the_end_of_generation():
    parsed = parse_reply('<tool_call>{"name": "a", "arguments": {}}')
    assert parsed.calls[0].name == "a"


def test_parse_openai_structured_calls():
    parsed = parse_reply("", [{"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}}])
    assert parsed.calls[0].id == "c1" and parsed.calls[0].arguments == {"x": 1}


def test_parse_errors_say_what_is_wrong():
    assert "not valid JSON" in parse_reply("<tool_call>{oops}</tool_call>").error
    assert "needs a string 'name'" in parse_reply('<tool_call>{"arguments": {}}</tool_call>').error
    assert "must be a JSON object" in parse_reply("<tool_call>[1, 2]</tool_call>").error
    deep = "<tool_call>" + "[" * 100_000 + "]" * 100_000 + "</tool_call>"
    assert parse_reply(deep).error is not None


class Recorder:
    def __init__(self):
        self.batches = []
        self.closed = []
        self.inner = OracleAgent()

    def brief(self, episode_id, task):  # a wrapper of a reference agent passes the briefing on
        self.inner.brief(episode_id, task)

    def act(self, turns):
        self.batches.append(len(turns))
        return self.inner.act(turns)

    def close(self, ids):
        self.closed += ids
        self.inner.close(ids)


def test_episodes_run_in_lockstep_and_are_closed():
    agent = Recorder()
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS[:20]])
    assert agent.batches[0] == 20 and len(agent.batches) == max(len(e.steps) for e in episodes)
    assert agent.batches == sorted(agent.batches, reverse=True)
    assert len(agent.closed) == 20 == len(set(agent.closed))


def test_batched_and_one_by_one_give_the_same_episodes():
    together = run_episodes(OracleAgent(), [make_env("poi", t) for t in TASKS[:15]])
    alone = [run_episodes(OracleAgent(), [make_env("poi", t)])[0] for t in TASKS[:15]]
    assert [e.model_dump_json() for e in together] == [e.model_dump_json() for e in alone]


def test_a_window_keeps_its_batch_full_and_gives_the_same_episodes():
    agent = Recorder()
    windowed = run_episodes(agent, [make_env("poi", t) for t in TASKS[:20]], window=6)
    together = run_episodes(OracleAgent(), [make_env("poi", t) for t in TASKS[:20]])
    assert [e.model_dump_json() for e in windowed] == [e.model_dump_json() for e in together]
    assert max(agent.batches) == 6 and len(agent.closed) == 20 == len(set(agent.closed))
    # An ending episode's place is taken by the next env, so every round is full until the envs run out.
    rounds_to_drain = max(len(e.steps) for e in windowed)
    assert all(size == 6 for size in agent.batches[:-rounds_to_drain])


def test_each_env_can_have_its_own_step_budget():
    call_forever = ScriptedAgent(['<tool_call>{"name": "get_weather", "arguments": {"city": "Lyon"}}</tool_call>'] * 9)
    episodes = run_episodes(call_forever, [make_env("poi", t) for t in TASKS[:3]], max_steps=[1, 3, 2])
    assert [len(e.steps) for e in episodes] == [1, 3, 2] and {e.ending for e in episodes} == {"step_limit"}
    with pytest.raises(ValueError, match="2 budgets for 3 envs"):
        run_episodes(call_forever, [make_env("poi", t) for t in TASKS[:3]], max_steps=[1, 3])


def test_episodes_round_trip_through_json():
    for episode in run_episodes(OracleAgent(), [make_env("poi", t) for t in TASKS[:10]]):
        again = Episode.model_validate_json(episode.model_dump_json())
        assert again.model_dump() == episode.model_dump()
        assert again.success == episode.success and again.explain() == episode.explain()


def test_an_agent_that_raises_ends_its_episodes_as_agent_error():
    def broken(messages, tools):
        raise RuntimeError("model exploded")

    episodes = run_episodes(broken, [make_env("poi", t) for t in TASKS[:3]])
    assert {e.outcome for e in episodes} == {"agent_error"}
    assert "model exploded" in episodes[0].explain()


def test_an_agent_that_returns_too_few_replies_is_an_agent_error():
    class Short:
        def act(self, turns):
            return ["hi"]

    assert {e.outcome for e in run_episodes(Short(), [make_env("poi", t) for t in TASKS[:2]])} == {"agent_error"}


def test_explain_tells_the_story():
    text = run_episodes(OracleAgent(), [make_env("poi", TASKS[0])])[0].explain()
    assert "outcome: success" in text and "query:" in text and "->" in text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
tool_names = st.sampled_from(["find_place", "get_place_details", "book_place", "nope", ""]) | st.text(max_size=12)
calls = st.builds(lambda n, a: {"name": n, "arguments": a}, tool_names, json_values)
garbage_text = st.one_of(
    st.text(max_size=300),
    calls.map(lambda c: f"<tool_call>{json.dumps(c)}</tool_call>"),
    calls.map(lambda c: f"<tool_call>{json.dumps(c)}"[: len(json.dumps(c)) // 2]),
    json_values.map(lambda v: f"<tool_call>{json.dumps(v)}</tool_call>"),
    st.integers(1, 3000).map(lambda n: "<tool_call>" + '{"a":' * n + "1" + "}" * n + "</tool_call>"),
    st.integers(1, 200_000).map(lambda n: "x" * n),
)
garbage_replies = st.one_of(
    garbage_text,
    st.builds(Reply, text=garbage_text),
    st.lists(st.fixed_dictionaries({"function": calls}) | json_values, max_size=3).map(
        lambda cs: Reply(tool_calls=cs)  # type: ignore[arg-type]  # garbage on purpose: what a model may return
    ),
    json_values,  # not even a reply
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(garbage_replies, min_size=1, max_size=4), start=st.integers(0, len(TASKS) - 3))
def test_garbage_from_an_agent_never_crashes_an_episode(script, start):
    agent = ScriptedAgent(script)
    for episode in run_episodes(agent, [make_env("poi", t) for t in TASKS[start : start + 3]], max_steps=4):
        assert episode.outcome in OUTCOMES
        Episode.model_validate_json(episode.model_dump_json())
        episode.explain()


def test_import_sandbox_loads_no_torch_pytest_or_hypothesis():
    heavy = "('torch', 'pytest', 'hypothesis', 'transformers')"
    code = f"import sys, sandbox; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
