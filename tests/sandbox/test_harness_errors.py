"""An episode that fails because the machine ran out of descriptors, threads or memory is named as the
harness's failure, and a run that such failures stop does not ask for the agent to be fixed."""

import errno
import os

import pytest

import sandbox
from sandbox.evaluation.runner import Health
from sandbox.live_episode import HARNESS, harness_error


class Exhausted:
    """An agent whose every turn meets a machine out of ``exc``."""

    def __init__(self, exc):
        self.exc = exc

    def act(self, turns):
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "resource"),
    [
        (OSError(errno.EMFILE, os.strerror(errno.EMFILE)), "file descriptors"),
        (RuntimeError("can't start new thread"), "threads"),
        (MemoryError(), "memory"),
    ],
)
def test_an_episode_the_machine_failed_is_named_as_the_harnesss(exc, resource):
    envs = [sandbox.make_env("poi", t) for t in sandbox.tasks("poi", "test", 8)]
    episodes = sandbox.run_episodes(Exhausted(exc), envs)
    assert {e.outcome for e in episodes} == {"agent_error"}
    error = episodes[0].steps[-1].error
    assert error.startswith(f"{HARNESS} {resource}") and "not the agent's failure" in error
    health = Health()
    health.add(episodes)
    said = health.failure()
    assert said is not None and "the agent is not at fault" in said and "ulimit -n" in said
    assert "fix the agent" not in said


def test_an_agents_own_error_is_left_as_it_is():
    assert harness_error("request failed: HTTP 500") == "request failed: HTTP 500"
    named = harness_error("OSError: [Errno 24] Too many open files")
    assert harness_error(named) == named  # named once
