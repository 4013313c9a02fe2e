"""Agents see what an agent may see: the conversation and the tool specs, never the task.

Only a reference agent (one whose class defines ``brief``) is told the task, by its own channel.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from functools import cache

import pytest

from sandbox import OracleAgent, ScriptedAgent, StaticAgent, make_env, run_episodes, tasks
from sandbox.agent import Reference, Turn
from sandbox.audits.strength import sample_tasks
from sandbox.case import Case, run_cases
from sandbox.perturbations import get, names

JSON_LEAVES = (str, int, float, bool, type(None))
UNSOLVABLE_KINDS = ("missing_capability", "nonexistent_entity", "fatal_error")


@cache
def sample():
    """One test task per family of each domain, unsolvable families included."""
    return tuple(sample_tasks(per_family=1))


@cache
def perturbed_cases():
    """Each perturbation at its highest severity on every task it applies to, clean cases first."""
    cases = [Case(t) for t in sample()]
    for name in names():
        spec = get(name)(severity=get(name).max_severity, pool="eval", seed=11)
        cases += [Case(t, (spec,)) for t in sample() if spec.applies_to(t)]
    return tuple(cases)


class Spy:
    """Keeps every turn it is given; answers at once, or replays a script when given one."""

    def __init__(self, script=None):
        self.turns: list[Turn] = []
        self.script = script

    def act(self, turns):
        self.turns += turns
        return self.script.act(turns) if self.script else ["I do not know."] * len(turns)


def leaves(value, path="turn"):
    """Every (path, leaf) reachable from ``value``, failing on anything that is not plain JSON data."""
    if isinstance(value, dict):
        for key, inner in value.items():
            assert isinstance(key, str), f"{path}: a non-string key {key!r}"
            yield from leaves(inner, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for n, inner in enumerate(value):
            yield from leaves(inner, f"{path}[{n}]")
    else:
        assert isinstance(value, JSON_LEAVES), f"{path} is a {type(value).__name__}, not JSON data"
        yield path, value


def everything(turn: Turn) -> dict:
    """All a turn holds: every attribute it has, by whatever means an agent would look."""
    names_ = {a for a in dir(turn) if not a.startswith("__")}
    assert names_ == {"episode_id", "messages", "tools"}, f"a turn carries more than the conversation: {names_}"
    assert not hasattr(turn, "__dict__"), "a turn should have no room for extra attributes"
    return {a: getattr(turn, a) for a in sorted(names_)}


def assert_blind(turn: Turn, case: Case) -> None:
    task = case.task
    seen = dict(leaves(everything(turn)))
    text = json.dumps(list(seen.values()), default=str)
    keys = {p.rsplit(".", 1)[-1] for p in seen if p.startswith("turn.messages")}
    query = case.env().query()
    # Gold answer values the agent may not know yet: not in the query (an echoed city is fair game)
    # and not in the tool specs (a category named in a description is fair game too).
    visible = query + json.dumps(turn.tools)
    hidden = [str(v) for v in task.answer.values() if str(v) and str(v) not in visible]
    for value in hidden:
        shown = [
            p
            for p, leaf in seen.items()
            if isinstance(leaf, str) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", leaf)
        ]
        assert not shown, f"{case.describe()}: the turn shows the gold answer value {value!r} at {shown}"
    assert task.id not in text, f"{case.describe()}: the turn names the task ({task.id})"
    assert task.family not in turn.episode_id and task.id not in turn.episode_id
    for kind in UNSOLVABLE_KINDS:
        assert kind not in text, f"{case.describe()}: the turn says {kind!r}"
    assert keys <= {"role", "content"}, f"{case.describe()}: the opening messages carry {keys}"
    plan = json.dumps([{"name": c.tool, "arguments": c.args} for c in task.plan])
    assert plan not in text, f"{case.describe()}: the turn holds the gold plan"


def test_a_turn_is_the_conversation_and_the_tools_only():
    assert [f.name for f in dataclasses.fields(Turn)] == ["episode_id", "messages", "tools"]
    turn = Turn("ep0", [], [])
    with pytest.raises(AttributeError):
        turn.info  # noqa: B018
    with pytest.raises(AttributeError):
        object.__setattr__(turn, "info", {})


def test_an_agent_that_looks_at_everything_on_the_first_turn_sees_no_gold():
    cases = perturbed_cases()
    spy = Spy()
    episodes = run_cases(spy, cases)
    assert len(spy.turns) == len(cases) and all(e.outcome != "agent_error" for e in episodes)
    assert len({t.episode_id for t in spy.turns}) == len(cases)
    hidden = 0
    for turn, case in zip(spy.turns, cases, strict=True):
        assert_blind(turn, case)
        hidden += bool(case.task.answer)
    assert hidden > 20, "the check must cover tasks with gold answers"
    assert any(not c.solvable for c in cases) and any(c.solvable for c in cases)


def _first_turn(case: Case) -> Turn:
    spy = Spy()
    case.run(spy)
    (turn,) = spy.turns
    return Turn("ep", turn.messages, turn.tools)  # episode ids differ from run to run


def test_what_an_agent_sees_does_not_depend_on_the_gold():
    # The same case with another gold answer (and, clean, another plan and solvability) looks the same.
    for case in perturbed_cases()[::3]:
        wrong = {k: f"not-{v}" for k, v in case.task.answer.items()}
        other = {"answer": wrong}
        if not case.perturbations:
            other |= {"plan": (), "sources": {}, "write": None, "unsolvable": "fatal_error"}
        twin = Case(case.task.model_copy(update=other), case.perturbations)
        assert _first_turn(twin) == _first_turn(case), case.describe()


def test_an_agent_that_looks_at_every_turn_of_solved_episodes_sees_only_data():
    # Replay the oracle's episodes through a blind spy: it sees every turn a solver sees.
    cases = [c for c in perturbed_cases() if c.task.n_calls >= 2][:40]
    gold = run_cases(OracleAgent(), cases)
    assert all(e.success for e in gold)
    for case, episode in zip(cases, gold, strict=True):
        spy = Spy(ScriptedAgent.replay(episode))
        again = case.run(spy)
        assert again.outcome == episode.outcome, again.explain()
        assert len(spy.turns) == len(episode.steps)
        for turn in spy.turns:
            dict(leaves(everything(turn)))  # plain data all the way down: no task, env or world object
            text = json.dumps([turn.messages, turn.tools])
            assert case.task.id not in text and "unsolvable" not in text


def test_a_cheater_that_reads_turn_info_ends_as_agent_error_not_a_crash():
    class Cheater:
        def act(self, turns):
            return ["; ".join(f"{k}: {v}" for k, v in turn.info["task"].answer.items()) for turn in turns]

    episodes = run_episodes(Cheater(), [make_env("poi", t) for t in tasks("poi", "test", n=6)])
    assert [e.outcome for e in episodes] == ["agent_error"] * 6
    assert all("AttributeError" in e.steps[-1].error for e in episodes)


def test_an_ordinary_agent_is_never_briefed():
    asked: list[str] = []

    class Proxy:
        """Answers every attribute, as a mock or a forwarding proxy does."""

        def act(self, turns):
            return ["I do not know."] * len(turns)

        def __getattr__(self, name):
            asked.append(name)
            return lambda *args, **kwargs: asked.append(f"called {name}")

    assert not isinstance(ScriptedAgent(["x"]), Reference)
    run_episodes(Proxy(), [make_env("poi", t) for t in tasks("poi", "test", n=3)])
    assert not any("brief" in a for a in asked)


def test_reference_agents_are_briefed_and_forget_at_close():
    agent = OracleAgent()
    assert isinstance(agent, Reference) and isinstance(StaticAgent(), Reference)
    envs = [make_env("poi", t) for t in tasks("poi", "test", n=12)]
    for batch in (envs[:5], envs[5:]):  # one agent object, many batches
        episodes = run_episodes(agent, batch)
        assert all(e.success for e in episodes), [e.outcome for e in episodes]
        assert not agent._briefs, "the oracle keeps tasks of closed episodes"


def test_one_reference_agent_runs_batches_at_once():
    agent = OracleAgent()
    batches = [[make_env(d, t) for t in tasks(d, "test", n=8)] for d in ("poi", "medical", "poi")]
    results: list = [None] * len(batches)

    def run(n):
        results[n] = run_episodes(agent, batches[n])

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for batch, episodes in zip(batches, results, strict=True):
        assert [e.task.id for e in episodes] == [env.task.id for env in batch]
        assert all(e.success for e in episodes), [e.outcome for e in episodes]
    assert not agent._briefs


def test_an_unbriefed_reference_agent_says_how_to_brief_it():
    env = make_env("poi", tasks("poi", "test", n=1)[0])
    with pytest.raises(LookupError, match=r"was not briefed on episode 'ep-x'.*brief\(episode_id, task\)"):
        OracleAgent().act([Turn("ep-x", env.reset(), env.tool_specs())])

    class Hides:
        """Wraps the oracle without passing the briefing on."""

        inner = OracleAgent()

        def act(self, turns):
            return self.inner.act(turns)

    episode = run_episodes(Hides(), [env])[0]
    assert episode.outcome == "agent_error" and "was not briefed" in episode.steps[-1].error


def test_a_brief_that_raises_is_an_agent_error():
    class Broken(OracleAgent):
        def brief(self, episode_id, task):
            raise RuntimeError("no room")

    episodes = run_episodes(Broken(), [make_env("poi", t) for t in tasks("poi", "test", n=3)])
    assert [e.outcome for e in episodes] == ["agent_error"] * 3
    assert "RuntimeError: no room" in episodes[0].steps[-1].error
