"""Test-only perturbations and agents, so plugin and core tests do not depend on the real catalogue.

``toy_shout`` (perception) shouts the query with 1-3 exclamation marks; ``toy_pad`` (interaction)
pads observations and applies only to tasks with tool calls. Both leave every task solvable.
``toy_unplug`` (interaction, registered only by the tests that want it) is a broken perturbation: every
call fails as if the tool had gone for good, yet the case still claims to be solvable, so the oracle
cannot be right on it. ``Fragile`` is the oracle, except that it gives up on a shouted query (2 marks or
more) when the task needs a tool call: its minimal failure is ``toy_shout`` at severity 2 on a one-call
task. ``Stubborn`` refuses every task of two calls or more, clean too: its failures are not the
perturbations' doing. ``FirstTools`` is the oracle planning with the tool list of its first turn: drift
breaks it. ``Strained``
fails only under ``toy_shout(s=3)`` stacked with ``toy_hum`` at 27 or more (perception, severity up to 30), and
works harder the louder the query (``toy_space``, severity up to 5, changes nothing for it).
Pytester runs get this file as their conftest (see ``CONFTEST``) and ``AGENTS`` as a module.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.agent import Reply
from sandbox.agents import OracleAgent
from sandbox.env import Wrapper
from sandbox.perturbations import Perturbation, registry
from sandbox.tools import ToolResult

NAMES = ("toy_shout", "toy_pad", "toy_hum", "toy_space")


class _Shout(Wrapper):
    def __init__(self, env, marks):
        super().__init__(env)
        self.marks = marks
        self.label = f"shout{marks}"

    def query(self):
        return self.env.query().upper() + "!" * self.marks


class ToyShout(Perturbation):
    name = "toy_shout"
    tier = "perception"
    shift = "query"
    min_severity = 0
    max_severity = 3

    def apply(self, env):
        return env if self.severity == 0 else _Shout(env, self.severity)


class _Pad(Wrapper):
    label = "pad"

    def observe(self, result):
        return "  " + self.env.observe(result)


class ToyPad(Perturbation):
    name = "toy_pad"
    tier = "interaction"
    shift = "observation"

    def applies_to(self, task):
        return task.n_calls >= 1

    def apply(self, env):
        return _Pad(env)


class _Unplug(Wrapper):
    label = "unplug"

    def call(self, name, arguments):
        return ToolResult(name=name, error="not_found", message=f"{name} is gone for good")


class ToyUnplug(Perturbation):
    name = "toy_unplug"
    tier = "interaction"
    shift = "observation"
    needs_calls = True

    def apply(self, env):
        return _Unplug(env)


class _Suffix(Wrapper):
    def __init__(self, env, text, label):
        super().__init__(env)
        self.text = text
        self.label = label

    def query(self):
        return self.env.query() + self.text


class ToyHum(Perturbation):
    name = "toy_hum"
    tier = "perception"
    shift = "query"
    max_severity = 30

    def applies_to(self, task):
        return task.n_calls >= 1

    def apply(self, env):
        return _Suffix(env, " " + "~" * self.severity, f"hum{self.severity}")


class ToySpace(Perturbation):
    name = "toy_space"
    tier = "perception"
    shift = "query"
    max_severity = 5

    def applies_to(self, task):
        return task.n_calls >= 1

    def apply(self, env):
        return _Suffix(env, " " * self.severity, f"space{self.severity}")


def register_toys() -> None:
    for cls in (ToyShout, ToyPad, ToyHum, ToySpace):
        registry.register(cls)


def unregister_toys() -> None:
    for name in NAMES:
        registry._REGISTRY.pop(name, None)


class Fragile(OracleAgent):
    """Counts its batches in the file named by ``TOY_COUNT`` (one line per act call, if set)."""

    def fingerprint(self):
        return "fragile-v1"

    def act(self, turns):
        path = os.environ.get("TOY_COUNT")
        if path:
            with open(path, "a") as f:
                f.write(f"{len(turns)}\n")
        return super().act(turns)

    def reply(self, turn):
        if "!!" in turn.messages[1]["content"] and self.task_for(turn.episode_id).n_calls >= 1:
            return Reply(text="no idea")
        return super().reply(turn)


class Stubborn(OracleAgent):
    """The oracle, except that it refuses every task of two calls or more, perturbed or not."""

    def fingerprint(self):
        return "stubborn-v1"

    def reply(self, turn):
        if self.task_for(turn.episode_id).n_calls >= 2:
            return Reply(text="I cannot help with that.")
        return super().reply(turn)


class FirstTools(OracleAgent):
    """The oracle, except that it keeps the tool list of an episode's first turn and skips the notices that it
    changed: the brittle client that reads ``tools/list`` once. It fails where a tool list drifts mid-episode."""

    def __init__(self):
        self.first = {}

    def fingerprint(self):
        return "first-tools-v1"

    def act(self, turns):
        from sandbox.agent import Turn
        from sandbox.prompt import LIST_CHANGED

        seen = []
        for turn in turns:
            tools = self.first.setdefault(turn.episode_id, turn.tools)
            messages = [m for m in turn.messages if not str(m.get("content", "")).startswith(LIST_CHANGED)]
            seen.append(Turn(turn.episode_id, messages, tools))
        return super().act(seen)


class Strained(OracleAgent):
    """The oracle, strained by a query's shouting ('!') and humming ('~'): on its first turn it makes one call to a
    tool that does not exist for each mark and each 6 hums, and it gives up on a task with calls when the query
    holds 3 marks and 27 hums or more: only ``toy_shout(s=3)`` with ``toy_hum(s>=27)`` breaks it, a stack random
    draws rarely give, at the end of a slope that ``target()`` can climb."""

    def fingerprint(self):
        return "strained-v1"

    def reply(self, turn):
        query = turn.messages[1]["content"]
        marks, hums = query.count("!"), query.count("~")
        if self.task_for(turn.episode_id).n_calls >= 1:
            if marks >= 3 and hums >= 27:
                return Reply(text="no idea")
            waste = marks + hums // 6
            if waste and sum(m["role"] == "assistant" for m in turn.messages) == 0:
                calls = [{"id": f"w{i}", "function": {"name": "warm_up", "arguments": {}}} for i in range(waste)]
                return Reply(tool_calls=calls)
        return super().reply(turn)


_SOURCE = Path(__file__).read_text()
CONFTEST = _SOURCE + "\n\nregister_toys()\n\n\ndef pytest_unconfigure(config):\n    unregister_toys()\n"


class Dead:
    """An agent whose server is down: every request fails the same way."""

    def fingerprint(self):
        return "dead-v1"

    def act(self, turns):
        raise ConnectionRefusedError("[Errno 111] Connection refused")


class Counter(OracleAgent):
    """The oracle, counting the turns it was asked (so a test sees what the cache spared it)."""

    def __init__(self):
        self.turns = 0

    def fingerprint(self):
        return "counter-v1"

    def act(self, turns):
        self.turns += len(turns)
        return super().act(turns)
