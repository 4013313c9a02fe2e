"""An agent's cache key covers its own code: the project modules it imports and the files it declares (issue #45)."""

from __future__ import annotations

import importlib
import sys

import pytest

from sandbox.agent import fingerprint
from sandbox.agent_code import closure, is_own_code
from sandbox.evaluation import evaluate
from sandbox.evaluation.specs import load_agent

POLICY = """
REPLY = {reply!r}


def answer(messages):
    return REPLY
"""

AGENT = """
from fp_project import counting
from fp_project.policy import answer
from sandbox.agents import LoopAgent

openagent_files = ["prompts/system.txt"]


class Agent:
    def act(self, turns):
        counting.note(len(turns))
        return [answer(t.messages) for t in turns]


def reply(messages, tools):
    counting.note(1)
    return answer(messages)


def _loop(request, tools):
    counting.note(1)
    return answer([])


LOOP = LoopAgent(_loop, name="loop")
"""

COUNTING = """
import os

COUNT = {count!r}


def note(n):
    with open(COUNT, "a") as f:
        f.write("1\\n" * n)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A package ``fp_project``: ``agent`` imports ``policy`` (the reply) and ``counting``, declares a prompt."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    root = tmp_path / "fp_project"
    (root / "prompts").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "prompts" / "system.txt").write_text("be brief")
    count = tmp_path / "count.txt"
    (root / "counting.py").write_text(COUNTING.format(count=str(count)))
    (root / "agent.py").write_text(AGENT)

    class Project:
        path = root

        @staticmethod
        def policy(reply: str) -> None:
            (root / "policy.py").write_text(POLICY.format(reply=reply))
            for name in ("fp_project.policy", "fp_project.agent"):
                if name in sys.modules:
                    importlib.reload(sys.modules[name])

        @staticmethod
        def calls() -> int:
            return len(count.read_text().splitlines()) if count.exists() else 0

    Project.policy("I cannot help with that.")
    yield Project
    for name in [n for n in sys.modules if n == "fp_project" or n.startswith("fp_project.")]:
        sys.modules.pop(name)


@pytest.mark.parametrize("spec", ["fp_project.agent:Agent", "fp_project.agent:reply", "fp_project.agent:LOOP"])
def test_editing_a_module_the_agent_imports_reruns_its_episodes(project, tmp_path, spec):
    cache = tmp_path / "cache"
    first = load_agent(spec)
    evaluate(first, "perception", n=2, cache_dir=cache)
    ran = project.calls()
    assert ran > 0
    evaluate(load_agent(spec), "perception", n=2, cache_dir=cache)
    assert project.calls() == ran, "unchanged, the agent is served from the cache"

    project.policy("I am sorry, I cannot do that today.")
    edited = load_agent(spec)
    assert fingerprint(edited) != fingerprint(first)
    evaluate(edited, "perception", n=2, cache_dir=cache)
    assert project.calls() > ran, "the agent whose imported helper changed runs again"


@pytest.mark.parametrize("spec", ["fp_project.agent:Agent", "fp_project.agent:reply", "fp_project.agent:LOOP"])
def test_a_declared_prompt_file_is_in_the_key(project, spec):
    key = fingerprint(load_agent(spec))
    (project.path / "prompts" / "system.txt").write_text("be thorough")
    importlib.reload(sys.modules["fp_project.agent"])  # as the next run's process would load it
    assert fingerprint(load_agent(spec)) != key


def _calls_policy():
    from fp_project import policy

    def agent(messages, tools):
        return policy.answer(messages)

    return agent


def test_a_plain_function_keys_the_project_helpers_it_calls(project):
    key = fingerprint(_calls_policy())
    assert fingerprint(_calls_policy()) == key
    project.policy("something else")
    assert fingerprint(_calls_policy()) != key


def test_installed_and_standard_modules_are_not_the_agents_code(project):
    importlib.import_module("fp_project.agent")
    assert is_own_code("fp_project.policy")
    assert not is_own_code("json") and not is_own_code("pytest") and not is_own_code("sandbox.agent")
    own = ["fp_project", "fp_project.agent", "fp_project.counting", "fp_project.policy"]
    assert closure(["fp_project.agent"]) == own
