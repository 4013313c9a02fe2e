"""Agent fingerprints: a changed agent gets a new cache key, an unchanged one the same key in every process."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys

import pytest

import sandbox
from sandbox.agent import FunctionAgent, fingerprint
from sandbox.case import Case
from sandbox.evaluation import evaluate
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.runner import Runner
from sandbox.evaluation.specs import load_agent
from sandbox.fingerprint import checkpoint_digest

AGENT_MODULE = """
COUNT = {count!r}


class Agent:
    {version}
    def __init__(self):
        self.temperature = 0.0
        self.calls = 0

    def act(self, turns):
        self.calls += 1
        with open(COUNT, "a") as f:
            f.write(f"{{len(turns)}}\\n")
        return [{reply!r} for _ in turns]


def reply(messages, tools):
    with open(COUNT, "a") as f:
        f.write("1\\n")
    return {reply!r}
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A module ``fp_agent`` in tmp_path: ``write(reply, version)`` (re)writes and (re)loads it.

    ``calls()`` counts the agent's calls (batches of the class, turns of the function)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    count = tmp_path / "count.txt"
    path = tmp_path / "fp_agent.py"

    class Module:
        @staticmethod
        def write(reply: str, version: str | None = None) -> None:
            line = f"openagent_version = {version!r}" if version else ""
            path.write_text(AGENT_MODULE.format(count=str(count), reply=reply, version=line))
            if "fp_agent" in sys.modules:
                importlib.reload(sys.modules["fp_agent"])

        @staticmethod
        def calls() -> int:
            return len(count.read_text().splitlines()) if count.exists() else 0

    yield Module
    sys.modules.pop("fp_agent", None)


def _evaluate(agent, cache_dir):
    return evaluate(agent, "perception", n=2, cache_dir=cache_dir)


@pytest.mark.parametrize("spec", ["fp_agent:Agent", "fp_agent:reply"])
def test_editing_a_module_agent_gives_a_new_key_and_reruns_it(module, tmp_path, spec):
    module.write("I cannot help with that.")
    first = load_agent(spec)
    _evaluate(first, tmp_path / "cache")
    before = module.calls()
    assert before > 0
    assert fingerprint(load_agent(spec)) == fingerprint(first)
    _evaluate(load_agent(spec), tmp_path / "cache")
    assert module.calls() == before, "an unchanged agent is served from the cache"

    module.write("I am sorry, I cannot do that today.")
    edited = load_agent(spec)
    assert fingerprint(edited) != fingerprint(first)
    report = _evaluate(edited, tmp_path / "cache")
    assert module.calls() > before, "the edited agent runs again"
    assert all(r.agent == fingerprint(edited) for r in report.records)


def _say(text):
    def fn(messages, tools):
        return text

    return fn


def first(messages, tools):
    return "I cannot help with that."


def second(messages, tools):
    return "I cannot do that."


def test_two_plain_functions_get_two_keys_and_each_runs(tmp_path):
    keys = {fingerprint(first), fingerprint(second), fingerprint(_say("a")), fingerprint(_say("b"))}
    assert len(keys) == 4
    assert fingerprint(first) == fingerprint(first) == FunctionAgent(first).fingerprint()
    calls = {"first": 0, "second": 0}

    def counted(name, fn):
        def agent(messages, tools):
            calls[name] += 1
            return fn(messages, tools)

        return agent

    one, two = counted("first", first), counted("second", second)
    case = Case(sandbox.tasks("poi", "test", n=1)[0])
    with Runner(EpisodeCache(tmp_path)).installed():
        assert case.run(one).answer != case.run(two).answer
    assert calls == {"first": 1, "second": 1}


FUNCTION_MODULE = """
LIMIT = 3
WORDS = frozenset({"cafe", "museum", "park", "bar"})


def helper(text):
    return text[:LIMIT]


def agent(messages, tools, style={"tone": "plain", "n": 2}):
    if messages[-1]["content"] in {"a", "b", "c", "d"}:
        return helper("refuse")
    return helper(" ".join(sorted(WORDS)))
"""


def test_a_function_key_is_the_same_in_every_process(tmp_path):
    (tmp_path / "fp_functions.py").write_text(FUNCTION_MODULE)
    script = "from sandbox.agent import fingerprint; import fp_functions; print(fingerprint(fp_functions.agent))"
    keys = set()
    for seed in ("1", "2"):  # different str hashes: set and frozenset orders differ
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        keys.add(out.stdout.strip())
    assert len(keys) == 1 and keys.pop().startswith("function:fp_functions.agent@")


def test_a_function_key_follows_its_helpers_constants_and_closure(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "fp_helpers.py").write_text(FUNCTION_MODULE)
    import fp_helpers

    try:
        key = fingerprint(fp_helpers.agent)
        code = FUNCTION_MODULE
        for old, new in [("LIMIT = 3", "LIMIT = 4"), ("text[:LIMIT]", "text[-LIMIT:]"), ('"n": 2', '"n": 3')]:
            variant = {"__name__": "fp_helpers"}
            exec(compile(code.replace(old, new), str(tmp_path / "fp_helpers.py"), "exec", dont_inherit=True), variant)
            assert fingerprint(variant["agent"]) != key, f"{old} -> {new}"
        same = {"__name__": "fp_helpers"}
        exec(
            compile("\n\n\n" + code, str(tmp_path / "elsewhere.py"), "exec", dont_inherit=True), same
        )  # moved lines, other file
        assert fingerprint(same["agent"]) == key
    finally:
        sys.modules.pop("fp_helpers", None)
    assert fingerprint(_say("a")) == fingerprint(_say("a")) != fingerprint(_say("b"))


class Configurable:
    def __init__(self, temperature=0.0, prompt="be brief", helper=None):
        self.temperature = temperature
        self.prompt = prompt
        self.helper = helper if helper is not None else object()  # no stable repr: counts by its type
        self.calls = 0
        self._secret = object()

    def act(self, turns):
        self.calls += 1
        return ["no" for _ in turns]


def test_the_configuration_of_an_instance_is_in_its_key_and_no_address_is():
    base = Configurable()
    assert fingerprint(base) == fingerprint(Configurable())
    assert fingerprint(base) != fingerprint(Configurable(temperature=0.7))
    assert fingerprint(base) != fingerprint(Configurable(prompt="be thorough"))
    assert not re.search(r"0x[0-9a-f]{4,}", fingerprint(base))
    key = fingerprint(base)
    base.act([])
    assert fingerprint(base) == key, "read once: a counter the agent keeps does not change its key"


def test_an_agents_own_fingerprint_wins_and_openagent_version_replaces_the_source(module):
    class Own(Configurable):
        def fingerprint(self):
            return "mine-v1"

    assert fingerprint(Own()) == "mine-v1"

    module.write("first reply", version="1")
    key = fingerprint(load_agent("fp_agent:Agent"))
    module.write("a different reply, same version", version="1")
    assert fingerprint(load_agent("fp_agent:Agent")) == key
    module.write("a different reply, same version", version="2")
    assert fingerprint(load_agent("fp_agent:Agent")) != key

    def fn(messages, tools):
        return "x"

    fn.openagent_version = "7"
    versioned = fingerprint(fn)

    def fn(messages, tools):  # the same name, edited
        return "y"

    fn.openagent_version = "7"
    assert fingerprint(fn) == versioned


def test_a_checkpoint_digest_follows_the_bytes_of_the_files_that_decide_replies(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00" * 64)
    digest = checkpoint_digest(tmp_path)
    (tmp_path / "trainer_state.json").write_text("{}")
    (tmp_path / "optimizer.pt").write_bytes(b"state")
    os.utime(weights)  # a touch: same bytes
    assert checkpoint_digest(tmp_path) == digest

    stat = weights.stat()
    weights.write_bytes(b"\x01" + b"\x00" * 63)  # same size, and the old mtime put back
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert checkpoint_digest(tmp_path) != digest
    changed = checkpoint_digest(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{}")
    assert checkpoint_digest(tmp_path) != changed


@pytest.mark.slow
def test_an_hf_agent_gets_a_new_key_when_a_weight_file_changes(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from training.inference.model_agent import HFAgent
    from training.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny")
    other = build_tiny_model(tmp_path / "other", seed=1)
    loaded = HFAgent(path, dtype="fp32")
    key = loaded.fingerprint()
    assert key.startswith(f"hf:{path}|") and key == HFAgent(path, dtype="fp32").fingerprint()
    assert key != HFAgent(path, dtype="fp32", temperature=0.5).fingerprint()

    (path / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    assert HFAgent(path, dtype="fp32").fingerprint() != key
    assert loaded.fingerprint() == key, "an agent keeps the key of the weights it loaded"
