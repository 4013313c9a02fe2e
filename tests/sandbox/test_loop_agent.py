"""LoopAgent: an agent that owns its loop gets the episode's tools as callables; every call goes through the env
(recorded, judged), a tool error comes back as the call's result text, and an ended episode answers late calls."""

from __future__ import annotations

import json
import threading

import sandbox
from sandbox.agents import EpisodeTools, LoopAgent
from sandbox.agents.session import OVER
from sandbox.case import Case, run_cases
from sandbox.perturbations import registry


def _task():
    return next(t for t in sandbox.tasks("poi", "test", n=20, seed=0) if t.family == "phone")


def test_tool_errors_come_back_as_text_and_every_call_is_recorded():
    seen: list[str] = []

    def run(request: str, tools: EpisodeTools) -> str:
        finder = tools[0]
        seen.append(finder(nonsense=1))  # wrong arguments
        seen.append(tools.call("no_such_tool", {}))  # a name the list does not hold
        seen.append(tools.call(finder.name, "{not json"))  # the raw text a model wrote
        return "I could not do it."

    [episode] = run_cases(LoopAgent(run), [Case(_task())])
    assert [json.loads(s)["error"] for s in seen[:2]] == ["invalid_arguments", "unknown_tool"]
    assert [r.error for step in episode.steps for r in step.results][:2] == ["invalid_arguments", "unknown_tool"]
    assert episode.outcome in sandbox.OUTCOMES and episode.outcome != "agent_error", episode.explain()


def test_a_loop_that_solves_the_task_by_its_tools_succeeds_and_sees_perturbed_names():
    renamed = registry.create("tool_name_noise", severity=2)
    names: list[list[str]] = []

    def run(request: str, tools: EpisodeTools) -> str:
        names.append([t.name for t in tools])
        task = _task()
        finder = next(t for t in tools if set(t.parameters["properties"]) == {"name", "city"})
        found = json.loads(finder(**task.plan[0].args))
        details = next(t for t in tools if set(t.parameters["properties"]) == {"place_id"})
        return f"phone: {json.loads(details(place_id=found['id']))['phone']}"

    clean, perturbed = run_cases(LoopAgent(run), [Case(_task()), Case(_task(), (renamed,))])
    assert clean.success, clean.explain()
    assert perturbed.success, perturbed.explain()
    assert "find_place" in names[0] and "find_place" not in names[1]
    called = [c.name for s in perturbed.steps for c in s.calls]
    assert len(called) == 2 and set(called) <= set(names[1])


def test_a_loop_that_raises_ends_its_episode_as_agent_error_with_its_message():
    def run(request: str, tools: EpisodeTools) -> str:
        raise RuntimeError("the framework gave up")

    [episode] = run_cases(LoopAgent(run), [Case(_task())])
    assert episode.outcome == "agent_error" and "the framework gave up" in episode.steps[-1].error


def test_calls_after_the_step_limit_get_the_episode_is_over_and_the_loop_goes_home():
    after: list[str] = []
    finished = threading.Event()

    def run(request: str, tools: EpisodeTools) -> str:
        try:
            for _ in range(20):
                result = tools.call("find_place", _task().plan[0].args)
                if result == OVER:
                    after.append(result)
                    break
            return "done"
        finally:
            finished.set()

    [episode] = run_cases(LoopAgent(run), [Case(_task())], max_steps=3)
    assert episode.outcome == "step_limit" and len(episode.steps) == 3
    assert finished.wait(5) and after == [OVER]


def test_two_loops_never_share_a_cache_key():
    def one(request: str, tools: EpisodeTools) -> str:
        return "one"

    def two(request: str, tools: EpisodeTools) -> str:
        return "two"

    assert sandbox.agent.fingerprint(LoopAgent(one)) != sandbox.agent.fingerprint(LoopAgent(two))
