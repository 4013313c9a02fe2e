"""No run lost to one reply: each fault of an agent ends its own episode, classified, and nothing escapes.

Each case runs a batch of three episodes where only the first gets the faulty reply; the other two
answer plainly, and must end as they would in a batch without the fault.
"""

import json

import pytest

import sandbox
from sandbox import Episode, Reply, Wrapper, make_env, run_episodes
from sandbox.episode import MAX_MESSAGE_CHARS, MAX_STORED_REPLY
from sandbox.evaluation.cache import MAX_EPISODE_BYTES
from sandbox.judge import OUTCOMES
from sandbox.parse import MAX_ARGUMENT_CHARS, MAX_CALLS, MAX_REPLY_CHARS, clean_text, parse_reply

TASKS = sandbox.tasks("poi", "test", 3)
PLAIN = "The answer is 42."
DEEP = "<tool_call>" + '{"name": "find_place", "arguments": ' + "[" * 250 + "]" * 250 + "}</tool_call>"


def call(arguments, name="find_place"):
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


class FirstGetsIt:
    """Gives ``fault`` to the first episode of the batch (on every turn) and ``PLAIN`` to the others."""

    def __init__(self, fault, close_raises=False):
        self.fault = fault
        self.close_raises = close_raises
        self.first = None

    def act(self, turns):
        if self.first is None:
            self.first = turns[0].episode_id
        return [self.fault if t.episode_id == self.first else PLAIN for t in turns]

    def close(self, ids):
        if self.close_raises:
            raise RuntimeError("close exploded")


def storable(episode):
    """The checks every episode passes: an outcome, JSON that encodes and reads back, a story."""
    assert episode.outcome in OUTCOMES
    blob = episode.model_dump_json().encode("utf-8")
    assert len(blob) < MAX_EPISODE_BYTES
    assert Episode.model_validate_json(blob).model_dump() == episode.model_dump()
    episode.explain().encode("utf-8")
    return episode


def run(agent, n=3, max_steps=3):
    episodes = [storable(e) for e in run_episodes(agent, [make_env("poi", t) for t in TASKS[:n]], max_steps)]
    plain = run_episodes(lambda messages, tools: PLAIN, [make_env("poi", t) for t in TASKS[1:n]], max_steps)
    assert [e.outcome for e in episodes[1:]] == [e.outcome for e in plain], "the fault reached other episodes"
    return episodes[0]


class Loud:
    def __str__(self):
        return "loud"


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        pytest.param(call(DEEP[11:-12]), "parse_error", id="250-deep JSON"),
        pytest.param(DEEP, "parse_error", id="250-deep arguments"),
        pytest.param("<tool_call>" + "[" * 100_000 + "</tool_call>", "parse_error", id="RecursionError deep"),
        pytest.param(call('{"query": ' + "7" * 5000 + "}"), "parse_error", id="5000-digit argument"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"q": 10**5000}}]), "parse_error",
                     id="5000-digit int in structured call"),
        pytest.param(call('"not json"'), "parse_error", id="arguments a string that is no JSON"),
        pytest.param(call('{"query": NaN}'), "parse_error", id="NaN"),
        pytest.param(call('{"query": -Infinity}'), "parse_error", id="-Infinity"),
        pytest.param(call('{"query": 1e999}'), "parse_error", id="1e999 overflows to inf"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"q": float("nan")}}]), "parse_error",
                     id="nan in structured call"),
        pytest.param(Reply(tool_calls=5), "parse_error", id="tool_calls=5"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param(Reply(tool_calls="find_place"), "parse_error", id="tool_calls a string"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param(Reply(tool_calls={"name": "find_place"}), "parse_error", id="tool_calls a dict"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param(Reply(tool_calls=[5, None]), "parse_error", id="calls that are not objects"),
        pytest.param(Reply(tool_calls=[{"id": 7, "function": {"name": "find_place"}}]), "parse_error", id="int id"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {1: "x"}}]), "parse_error", id="int key"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"q": {1, 2}}}]), "parse_error",
                     id="a set"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"q": Loud()}}]), "parse_error",
                     id="an object"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": b"{}"}]), "parse_error", id="bytes"),
        pytest.param(Reply(text=5), "parse_error", id="text an int"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param(Reply(text=None), "parse_error", id="text None"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param(Reply(text=b"hi"), "parse_error", id="text bytes"),  # type: ignore[arg-type]  # a wrong type on purpose
        pytest.param("".join(call("{}") for _ in range(MAX_CALLS + 1)), "parse_error", id="too many calls"),
        pytest.param("x" * (MAX_REPLY_CHARS + 1), "parse_error", id="a reply over the cap"),
        pytest.param(call('{"query": "' + "A" * 10_000_000 + '"}'), "parse_error", id="a 10 MB argument"),
        pytest.param(call('{"query": "' + "A" * MAX_ARGUMENT_CHARS + '"}'), "parse_error",
                     id="arguments over the cap in a reply under it"),
        pytest.param(Reply(tool_calls=[{"function": {"name": "find_place",
                                                     "arguments": '{"query": "' + "A" * 10_000_000 + '"}'}}]),
                     "parse_error", id="a 10 MB structured arguments string"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"query": "A" * MAX_ARGUMENT_CHARS}}]),
                     "parse_error", id="a long argument in a dict"),
        pytest.param(42, "agent_error", id="an int, not a reply"),
        pytest.param(None, "agent_error", id="None, not a reply"),
        pytest.param({"content": "hi"}, "agent_error", id="a dict, not a reply"),
    ],
)  # fmt: skip
def test_a_reply_that_cannot_be_read_ends_its_own_episode(fault, outcome):
    episode = run(FirstGetsIt(fault))
    assert episode.outcome == outcome and episode.steps[-1].error


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(call("[1, 2]"), id="arguments a list"),
        pytest.param(call("7"), id="arguments an int"),
        pytest.param(call('{"query": "' + "\\ud800" + '"}'), id="escaped lone surrogate"),
        pytest.param(Reply(tool_calls=[{"name": "find_place", "arguments": {"query": "\udcff\ud83d\ude00"}}]),
                     id="lone surrogate in a structured call"),
        pytest.param(call("{}", name="nope\ud800"), id="surrogate in the tool name"),
        pytest.param(Reply(text="thinking", meta=5), id="meta not a dict"),  # type: ignore[arg-type]  # a wrong type on purpose
    ],
)  # fmt: skip
def test_odd_arguments_reach_the_tools_and_come_back_as_observations(fault):
    episode = run(FirstGetsIt(fault))
    assert episode.outcome not in ("parse_error", "agent_error"), episode.explain()


@pytest.mark.parametrize("text", ["done \ud800", "\udfff", "a\ud83d\ude00b\ud83d"])
def test_lone_surrogates_become_replacement_characters_so_the_episode_can_be_sent_and_stored(text):
    episode = run(FirstGetsIt(text))
    assert episode.ending == "answer" and episode.outcome not in ("parse_error", "agent_error")
    assert episode.answer == clean_text(text) and "\ufffd" in episode.answer
    assert clean_text("a\ud83d\ude00b") == "a\U0001f600b"  # a pair split in two code points is joined


def test_a_huge_reply_is_judged_whole_and_stored_bounded():
    huge = "x" * (MAX_REPLY_CHARS - 100) + " The answer is 42."
    episode = run(FirstGetsIt(huge))
    assert len(episode.steps[-1].reply) < MAX_STORED_REPLY + 100 and "characters cut" in episode.steps[-1].reply
    assert len(episode.answer) < MAX_MESSAGE_CHARS + 100
    assert len(episode.messages[-1]["content"]) < MAX_MESSAGE_CHARS + 100


def test_a_runaway_reply_ends_its_episode_at_the_first_turn_and_the_episode_stays_small():
    for fault in (call('{"query": "' + "A" * 10_000_000 + '"}'), "B" * 10_000_000):
        episode = run(FirstGetsIt(fault), max_steps=8)
        assert episode.outcome == "parse_error" and len(episode.steps) == 1
        assert "10,000,0" in episode.steps[0].error and "more than the 1,000,000" in episode.steps[0].error
        assert len(episode.model_dump_json()) < 20_000


def test_an_argument_at_the_cap_is_a_call():
    parsed = parse_reply(call('{"query": "' + "A" * (MAX_ARGUMENT_CHARS - 100) + '"}'))
    assert parsed.error is None and len(parsed.calls[0].arguments["query"]) == MAX_ARGUMENT_CHARS - 100
    parsed = parse_reply("before " + call("{}") + " between <tool_call>" + '{"name": "b"}')
    assert parsed.error is None and [c.name for c in parsed.calls] == ["find_place", "b"]
    assert parsed.text == "before  between"


def test_huge_replies_with_calls_on_every_turn_keep_the_episode_under_the_cache_cap():
    episode = run(FirstGetsIt("y" * 500_000 + call('{"query": "cafe"}')), max_steps=8)
    assert episode.outcome in ("step_limit", "invalid_arguments") and len(episode.steps) == 8


def test_a_close_that_raises_leaves_the_episodes_as_classified():
    plain = run_episodes(lambda messages, tools: PLAIN, [make_env("poi", t) for t in TASKS])
    episodes = run_episodes(FirstGetsIt(PLAIN, close_raises=True), [make_env("poi", t) for t in TASKS])
    assert [e.model_dump() for e in episodes] == [e.model_dump() for e in plain]


class Batch:
    """An agent whose ``act`` returns ``make(turns)``."""

    def __init__(self, make, close_raises=False):
        self.make = make
        self.close_raises = close_raises

    def act(self, turns):
        return self.make(turns)

    def close(self, ids):
        if self.close_raises:
            raise ValueError("close failed")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")


def _raise(exc):
    raise exc


def _generator_that_fails(turns):
    yield PLAIN
    raise RuntimeError("stream cut")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda turns: None, id="None"),
        pytest.param(lambda turns: PLAIN, id="one string"),
        pytest.param(lambda turns: Reply(text=PLAIN), id="one Reply"),
        pytest.param(lambda turns: [PLAIN] * (len(turns) + 1), id="too many"),
        pytest.param(lambda turns: [], id="none at all"),
        pytest.param(lambda turns: 7, id="an int"),
        pytest.param(_generator_that_fails, id="a generator that raises"),
        pytest.param(lambda turns: _raise(RuntimeError("boom \ud800")), id="raises, surrogate in message"),
        pytest.param(lambda turns: _raise(Unprintable()), id="raises, str() raises"),
        pytest.param(lambda turns: _raise(RecursionError("deep")), id="RecursionError"),
        pytest.param(lambda turns: _raise(ValueError("x" * 1_000_000)), id="a huge message"),
    ],
)
@pytest.mark.parametrize("close_raises", [False, True])
def test_a_batch_that_is_not_one_reply_per_turn_ends_its_episodes_as_agent_errors(make, close_raises):
    episodes = run_episodes(Batch(make, close_raises), [make_env("poi", t) for t in TASKS])
    assert {storable(e).outcome for e in episodes} == {"agent_error"}
    assert all(len(e.steps[-1].error) <= 2100 for e in episodes)


def test_a_generator_of_replies_is_a_batch():
    episodes = run_episodes(Batch(lambda turns: (PLAIN for _ in turns)), [make_env("poi", t) for t in TASKS])
    plain = run_episodes(lambda messages, tools: PLAIN, [make_env("poi", t) for t in TASKS])
    assert [e.model_dump() for e in episodes] == [e.model_dump() for e in plain]


class RaisesOn(sandbox.OracleAgent):
    """The oracle, except that any batch holding ``query``'s conversation after a tool result raises."""

    def __init__(self, query):
        super().__init__()
        self.query = query
        self.batches = 0

    def act(self, turns):
        self.batches += 1
        if any(t.messages[1]["content"] == self.query and t.messages[-1]["role"] == "tool" for t in turns):
            raise RuntimeError("cannot read this conversation")
        return super().act(turns)


@pytest.mark.parametrize("window", [None, 3])
def test_a_batch_that_raises_is_asked_again_in_parts_so_only_the_raising_conversation_fails(window):
    tasks = sandbox.tasks("poi", "test", 12)
    bad = next(i for i, t in enumerate(tasks) if t.n_calls >= 1 and t.solvable)
    agent = RaisesOn(make_env("poi", tasks[bad]).reset()[1]["content"])
    episodes = run_episodes(agent, [make_env("poi", t) for t in tasks], window=window)
    alone = [run_episodes(sandbox.OracleAgent(), [make_env("poi", t)])[0] for t in tasks]
    assert storable(episodes[bad]).outcome == "agent_error"
    assert "RuntimeError: cannot read this conversation" in episodes[bad].steps[-1].error
    others = [i for i in range(len(tasks)) if i != bad]
    assert [episodes[i].model_dump() for i in others] == [alone[i].model_dump() for i in others]
    assert agent.batches < 4 * len(tasks)  # halves, not every subset


class Exploding(Wrapper):
    label = "exploding"

    def call(self, name, arguments):
        raise RuntimeError("a wrapper bug")


def test_an_exception_while_processing_one_reply_ends_only_that_episode():
    envs = [Exploding(make_env("poi", TASKS[0])), make_env("poi", TASKS[1])]
    reply = call('{"query": "cafe"}')
    episodes = run_episodes(lambda messages, tools: reply, envs, max_steps=2)
    assert storable(episodes[0]).outcome == "agent_error"
    assert "the sandbox failed on this reply: RuntimeError: a wrapper bug" in episodes[0].steps[-1].error
    assert episodes[1].outcome != "agent_error" and len(episodes[1].steps) == 2


def test_parse_reply_never_raises_and_its_calls_are_plain_json():
    cyclic: list = []
    cyclic.append(cyclic)
    for tool_calls in ([{"name": "a", "arguments": cyclic}], [{"function": {"function": {"name": "a"}}}], (), None):
        parsed = parse_reply("x", tool_calls)
        for c in parsed.calls:
            json.dumps(c.arguments, allow_nan=False).encode()


def test_a_case_that_fails_to_start_ends_as_its_own_agent_error_episode():
    import sandbox
    from sandbox.env import Wrapper

    class Broken(Wrapper):
        label = "broken"

        def query(self):
            raise RuntimeError("this perturbation cannot word the request")

    tasks = sandbox.tasks("poi", "test", 2)
    envs = [Broken(sandbox.make_env("poi", tasks[0])), sandbox.make_env("poi", tasks[1])]
    broken, fine = sandbox.run_episodes(sandbox.OracleAgent(), envs)
    assert broken.outcome == "agent_error" and "failed to start this case" in broken.steps[-1].error
    assert fine.success
