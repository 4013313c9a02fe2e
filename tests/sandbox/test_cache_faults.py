"""The episode cache under faults: an episode is stored or skipped, a bad line is skipped and replaced,
a killed writer loses at most the episodes in flight; and a fuzz run of garbage agents through both
``run_episodes`` and the cache, where nothing escapes and every episode reads back or is skipped."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import Episode, Reply, Wrapper, make_env, run_episodes
from sandbox.case import Case
from sandbox.evaluation import cache as cache_module
from sandbox.evaluation.cache import MAX_EPISODE_BYTES, STALE_TEMP_SECONDS, EpisodeCache
from sandbox.judge import OUTCOMES
from sandbox.tools import ToolResult

TASKS = sandbox.tasks("poi", "test", 40)
CASES = [Case(t) for t in TASKS[:6]]


class Plain:
    """Answers every turn at once; counts the turns it was asked."""

    def __init__(self, text="The answer is 42.", name="plain"):
        self.text, self.name, self.turns = text, name, 0

    def fingerprint(self):
        return f"plain:{self.name}"

    def act(self, turns):
        self.turns += len(turns)
        return [self.text] * len(turns)


def packs(directory):
    return sorted(Path(directory).rglob("pack-*.jsonl"))


def test_episodes_are_on_disk_when_run_returns_without_a_flush(tmp_path):
    EpisodeCache(tmp_path).run(Plain(), CASES)  # no flush: as if the test were killed right after
    agent = Plain()
    fresh = EpisodeCache(tmp_path)
    fresh.run(agent, CASES)
    assert agent.turns == 0 and fresh.hits == len(CASES)
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path):
    first = EpisodeCache(tmp_path).run(Plain("done \ud800"), CASES[:2])
    again = EpisodeCache(tmp_path).run(Plain("never asked"), CASES[:2])
    assert [e.model_dump() for e in again] == [e.model_dump() for e in first] and "\ufffd" in again[0].answer


def test_an_episode_over_the_cap_is_kept_in_memory_and_not_written(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_EPISODE_BYTES", 100)
    cache = EpisodeCache(tmp_path)
    first = cache.run(Plain(), CASES[:2])
    again = cache.run(Plain(), CASES[:2])  # in memory for the session, marked as read back
    assert cache.skipped == 2 and all(e.cached for e in again) and not any(e.cached for e in first)
    assert [e.model_copy(update={"cached": False}) for e in again] == first
    assert not packs(tmp_path) and MAX_EPISODE_BYTES == 1 << 20


def test_an_episode_that_cannot_be_serialised_is_skipped(tmp_path, monkeypatch):
    def broken(self, **kwargs):
        raise ValueError("cannot serialise")

    cache = EpisodeCache(tmp_path)
    monkeypatch.setattr(Episode, "model_dump_json", broken)
    [episode] = cache.run(Plain(), CASES[:1])
    assert episode.outcome in OUTCOMES and cache.skipped == 1


def _corrupt_lines(key):
    good = key.encode()
    return [
        good + b"\t{not json",  # bad JSON
        good + b'\t{"task": "\xff\xfe"}',  # bytes that are not UTF-8 in the episode
        b"\xff" * 40 + b"\t{}",  # ... and in the key
        good + b'\t{"foo": 1}',  # another schema
        good + b'\t{"task": {"id": ',  # a torn line
        b"no tab at all",
        b"\x00\x01\x02 binary",
    ]


def test_corrupt_lines_are_skipped_their_cases_rerun_and_replaced_not_rerun_forever(tmp_path):
    agent = Plain()
    keys = [EpisodeCache.key(agent.fingerprint(), c) for c in CASES]
    folder = tmp_path / "x"
    EpisodeCache(tmp_path).run(agent, CASES[:1])  # one good episode, to see it survives
    folder = packs(tmp_path)[0].parent
    bad = b"\n".join(line for key in keys[1:] for line in _corrupt_lines(key))
    (folder / "pack-0000000000000000-1-0.jsonl").write_bytes(bad + b"\n" + keys[2].encode() + b'\t{"torn')
    cache = EpisodeCache(tmp_path)
    first = cache.run(agent, CASES)
    assert cache.hits == 1 and cache.misses == len(CASES) - 1 and cache.corrupt > 0
    agent.turns = 0
    again = EpisodeCache(tmp_path)
    assert [e.model_dump() for e in again.run(agent, CASES)] == [e.model_dump() for e in first]
    assert agent.turns == 0 and again.hits == len(CASES)


def test_a_newer_good_line_wins_over_an_older_bad_one_in_any_pack_order(tmp_path):
    agent = Plain()
    [episode] = EpisodeCache(tmp_path).run(agent, CASES[:1])
    [pack] = packs(tmp_path)
    key = EpisodeCache.key(agent.fingerprint(), CASES[0])
    (pack.parent / "pack-ffffffffffffffff-1-0.jsonl").write_bytes(key.encode() + b"\t{bad}\n")  # sorts last
    cache = EpisodeCache(tmp_path)
    assert cache.run(Plain(), CASES[:1])[0].model_dump() == episode.model_dump() and cache.hits == 1


class DeepResults(Wrapper):
    """A wrapper of the user's (a perturbation) whose results skip the toolbox's bounds: nested ``depth`` levels."""

    label = "deep results"

    def __init__(self, env, depth):
        super().__init__(env)
        self.depth = depth

    def call(self, name, arguments):
        content: object = "leaf"
        for _ in range(self.depth):
            content = {"a": content}
        return ToolResult(name=name, content=content)


def test_an_episode_that_would_not_read_back_is_never_written(tmp_path):
    reply = '<tool_call>{"name": "find_place", "arguments": {"query": "cafe"}}</tool_call>'
    for depth, written in ((250, 0), (150, 1)):  # deeper than pydantic's reader takes; as deep as it takes
        [episode] = run_episodes(lambda messages, tools: reply, [DeepResults(make_env("poi", TASKS[0]), depth)], 2)
        for _ in range(3):
            cache = EpisodeCache(tmp_path / str(depth))
            cache.put("k" * 40, episode, "deep")
            assert cache.skipped == 1 - written
        assert sum(len(p.read_bytes().splitlines()) for p in packs(tmp_path / str(depth))) == 3 * written
        assert (EpisodeCache(tmp_path / str(depth)).get("k" * 40, "deep") is not None) == bool(written)


def test_temporary_files_of_killed_writers_are_removed_when_the_folder_is_opened(tmp_path):
    EpisodeCache(tmp_path).run(Plain(), CASES[:1])
    folder = packs(tmp_path)[0].parent
    stale, fresh = folder / ".tmp-dead.jsonl", folder / ".tmp-live.jsonl"
    for tmp in (stale, fresh):
        tmp.write_bytes(b"x" * 1000)
    old = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(stale, (old, old))
    EpisodeCache(tmp_path).run(Plain(), CASES[:1])
    assert not stale.exists() and fresh.exists()


def test_a_failed_write_skips_the_episode_and_the_next_one_starts_a_new_pack(tmp_path, monkeypatch):
    cache = EpisodeCache(tmp_path)
    real_write = os.write
    calls = []

    def half_then_fail(fd, data):
        calls.append(fd)
        if len(calls) == 1:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(cache_module.os, "write", half_then_fail)
    cache.run(Plain(), CASES[:1])
    cache.run(Plain(), CASES[1:2])
    monkeypatch.undo()
    assert cache.skipped == 1 and len(packs(tmp_path)) == 2
    fresh = EpisodeCache(tmp_path)
    fresh.run(Plain(), CASES[:2])
    assert fresh.hits == 1 and fresh.misses == 1


def test_an_unwritable_directory_skips_episodes_and_never_raises(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = EpisodeCache(blocked)
    episodes = cache.run(Plain(), CASES[:3])
    cache.flush()
    assert len(episodes) == 3 and cache.skipped == 3


def test_writers_in_one_folder_each_append_to_their_own_pack(tmp_path):
    a, b = EpisodeCache(tmp_path), EpisodeCache(tmp_path)  # as two pytest-xdist workers
    for i, case in enumerate(CASES):
        (a if i % 2 else b).run(Plain(), [case])
    a.close()
    assert len(packs(tmp_path)) == 2
    fresh = EpisodeCache(tmp_path)
    fresh.run(Plain(), CASES)
    assert fresh.hits == len(CASES)


KILLED_WRITER = """
import sys, time
import sandbox
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache

class Plain:
    def fingerprint(self):
        return "plain:plain"
    def act(self, turns):
        return ["The answer is 42."] * len(turns)

cache = EpisodeCache(sys.argv[1])
for task in sandbox.tasks("poi", "test", 40):
    cache.run(Plain(), [Case(task)])
    print("stored", flush=True)
    time.sleep(0.01)
"""


def test_a_writer_killed_mid_run_loses_at_most_the_episode_in_flight(tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    for stored, _ in enumerate(writer.stdout, start=1):
        if stored == 5:
            writer.kill()
            break
    writer.wait(timeout=30)
    cache = EpisodeCache(tmp_path)
    cache.run(Plain(), [Case(t) for t in TASKS])
    assert cache.hits >= 5 and not list(tmp_path.rglob(".tmp-*"))


# The fuzz run: garbage agents through run_episodes and through the disk cache.

surrogates = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"])
texts = st.lists(st.text(max_size=12) | surrogates, max_size=6).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=12,
)
tool_names = st.sampled_from(["find_place", "get_place_details", "book_place", "nope", ""]) | texts
call_objects = st.builds(lambda n, a: {"name": n, "arguments": a}, tool_names, json_values)


def _deep(n: int, opener: str = "[", closer: str = "]") -> str:
    return opener * n + closer * n


def _nested(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


blocks = st.one_of(
    call_objects.map(lambda c: json.dumps(c, ensure_ascii=False)),
    call_objects.map(json.dumps).flatmap(lambda s: st.integers(0, len(s)).map(lambda i: s[:i])),  # torn
    call_objects.map(json.dumps).flatmap(lambda s: st.integers(0, len(s)).map(lambda i: s[:i] + "\x00}" + s[i:])),
    st.integers(1, 3000).map(lambda n: '{"name": "find_place", "arguments": ' + _deep(n) + "}"),
    st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(4000, 6000).map(lambda n: '{"name": "find_place", "arguments": {"q": ' + "9" * n + "}}"),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999"]).map(
        lambda x: '{"name": "find_place", "arguments": {"q": ' + x + "}}"
    ),
    texts,
)
reply_texts = st.one_of(
    texts,
    st.lists(st.tuples(texts, blocks, st.booleans()), min_size=1, max_size=3).map(
        lambda parts: "".join(f"{t}<tool_call>{b}{'</tool_call>' if closed else ''}" for t, b, closed in parts)
    ),
    st.integers(1, 300_000).map(lambda n: "x" * n),
)
odd_values = st.one_of(
    json_values,
    st.sampled_from([float("nan"), float("inf"), 10**5000, -(10**5000), b"bytes", {1, 2}, (1, 2), object()]),
    st.integers(1, 5000).map(_nested),
)
structured = st.one_of(
    st.lists(
        st.one_of(
            call_objects,
            st.builds(lambda c, i: {"id": i, "function": c}, call_objects, st.none() | texts | st.integers()),
            st.builds(lambda n, a: {"name": n, "arguments": a}, tool_names, odd_values),
            odd_values,
        ),
        max_size=4,
    ),
    odd_values,  # not a list at all
)
replies = st.one_of(
    reply_texts,
    reply_texts,
    st.builds(Reply, text=reply_texts),
    st.builds(Reply, text=st.just("") | texts, tool_calls=structured),
    st.builds(Reply, text=odd_values, meta=odd_values),
    odd_values,  # not even a reply
)
RAISE = "raise"
actions = st.one_of(replies, replies, replies, st.just(RAISE))
# A batch fault, once per run: ``act`` raises, returns one reply too many or too few, None, or a generator.
batch_faults = st.sampled_from([None, None, None, "raise", "extra", "short", "none", "generator"])


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str")


class Garbage:
    """Each episode (by order of first appearance) follows its own script of replies or raises."""

    def __init__(self, scripts, fault, fault_round, close_raises, counter, phase):
        self.scripts, self.fault, self.fault_round = scripts, fault, fault_round
        self.close_raises, self.counter, self.phase = close_raises, counter, phase
        self.index: dict[str, int] = {}
        self.turn: dict[str, int] = {}
        self.rounds = 0

    def fingerprint(self):
        return "garbage"

    def _reply(self, episode_id):
        script = self.scripts[self.index.setdefault(episode_id, len(self.index)) % len(self.scripts)]
        n = self.turn[episode_id] = self.turn.get(episode_id, -1) + 1
        action = script[min(n, len(script) - 1)]
        self.counter[self.phase] += 1
        if action == RAISE:
            raise Unprintable() if n % 2 else RuntimeError("agent exploded \ud800")
        return action

    def act(self, turns):
        self.rounds += 1
        fault = self.fault if self.rounds == self.fault_round else None
        if fault == "none":
            return None
        if fault == "generator":
            return (self._reply(t.episode_id) for t in turns)
        out = [self._reply(t.episode_id) for t in turns]
        if fault == "raise":
            raise RuntimeError("the batch failed")
        return [*out, "extra"] if fault == "extra" else out[:-1] if fault == "short" else out

    def close(self, ids):
        if self.close_raises:
            raise RuntimeError("close exploded")


def _check(episode):
    assert episode.outcome in OUTCOMES
    episode.model_dump_json().encode("utf-8")
    episode.explain().encode("utf-8")


FUZZ_REPLIES = 5_000
"""Replies at least, through each of the runner and the cache (about 7,000 each, in under 10 s)."""


def test_fuzz_garbage_agents_never_crash_the_runner_or_the_cache():
    counter = {"runner": 0, "cache": 0}

    @settings(
        max_examples=650,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(
        scripts=st.lists(st.lists(actions, min_size=1, max_size=3), min_size=1, max_size=4),
        fault=batch_faults,
        fault_round=st.integers(1, 3),
        close_raises=st.booleans(),
        start=st.integers(0, len(TASKS) - 12),
    )
    def run(scripts, fault, fault_round, close_raises, start):
        envs = [make_env("poi", t) for t in TASKS[start : start + 12]]
        for episode in run_episodes(Garbage(scripts, fault, fault_round, close_raises, counter, "runner"), envs, 3):
            _check(episode)
        cases = [Case(t) for t in TASKS[start : start + 12]]
        with tempfile.TemporaryDirectory() as directory:
            cache = EpisodeCache(directory)
            agent = Garbage(scripts, fault, fault_round, close_raises, counter, "cache")
            episodes = cache.run(agent, cases, 3)
            cache.close()
            fresh = EpisodeCache(directory)
            for case, episode in zip(cases, episodes, strict=True):
                _check(episode)
                again = fresh.get(EpisodeCache.key("garbage", case, 3), "garbage")
                if again is None:  # skipped: never cached, or too large to write
                    assert episode.outcome == "agent_error" or cache.skipped
                else:
                    assert again.model_dump() == episode.model_dump()
            assert fresh.corrupt == 0

    run()
    assert min(counter.values()) >= FUZZ_REPLIES, counter


def test_an_unreadable_agent_folder_is_misuse_not_a_silent_rerun(tmp_path, monkeypatch):
    import pytest

    from sandbox.errors import UsageError

    EpisodeCache(tmp_path).run(Plain(), CASES[:2])
    [pack] = packs(tmp_path)
    real = Path.read_bytes

    def denied(self):
        if self == pack:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)  # as for another user's pack (root reads everything)
    agent = Plain()
    with pytest.raises(UsageError, match=r"cannot read .*pack-.*Permission denied; every episode it holds would run"):
        EpisodeCache(tmp_path).run(agent, CASES[:2])
    assert agent.turns == 0, "nothing ran"
    monkeypatch.undo()
    if os.geteuid() != 0:  # the real thing, where permissions bind
        pack.parent.chmod(0)
        try:
            with pytest.raises(UsageError, match="cannot read"):
                EpisodeCache(tmp_path).run(Plain(), CASES[:2])
        finally:
            pack.parent.chmod(0o755)


def test_an_api_key_in_a_successful_reply_is_not_stored_in_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "key-0123456789abcdef")
    agent = Plain("Done. (debug: Authorization: Bearer abc.def-123 key-0123456789abcdef sk-proj-ABCDEFGHIJKLMNOP)")
    EpisodeCache(tmp_path).run(agent, CASES[:2])
    stored = b"".join(p.read_bytes() for p in packs(tmp_path))
    assert stored and b"key-0123456789abcdef" not in stored and b"abc.def-123" not in stored
    assert b"sk-proj-ABCDEFGHIJKLMNOP" not in stored and b"[redacted]" in stored
    again = EpisodeCache(tmp_path).run(Plain("never asked"), CASES[:2])
    assert "[redacted]" in again[0].answer
