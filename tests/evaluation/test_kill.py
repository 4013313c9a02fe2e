"""A run killed mid-way (``kill -9`` of ``openagent eval``) loses only the episodes in flight."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandbox.evaluation as core
from sandbox import tasks
from sandbox.agents import OracleAgent
from sandbox.case import Case
from tests.commands import ROOT
from tests.processes import communicate

SLOW_ORACLE = '''
import os
import time

from sandbox.agents import OracleAgent


class SlowOracle(OracleAgent):
    """The oracle, pausing $PAUSE seconds per batch, logging each episode it is told has ended to $ENDED."""

    def fingerprint(self):
        return "slow-oracle-v1"

    def act(self, turns):
        time.sleep(float(os.environ.get("PAUSE", "0")))
        return super().act(turns)

    def close(self, episode_ids):
        super().close(episode_ids)
        with open(os.environ["ENDED"], "a") as f:
            f.write("".join(f"{e}\\n" for e in episode_ids))


AGENT = SlowOracle()
'''
BATCH = 4  # cases per batch: with their twins, at most 8 episodes in flight
EVAL = ["-m", "pytest_openagent.cli", "eval", "--agent", "slow_oracle:AGENT", "--n", "8", "--batch-size", str(BATCH)]


def _eval(folder: Path, cache: str, pause: float, ended: str) -> subprocess.Popen:
    """``openagent eval`` of the slow oracle, run in ``folder`` as :func:`tests.commands.openagent` runs it."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PAUSE": str(pause), "ENDED": str(folder / ended)}
    argv = [sys.executable, "-P", *EVAL, "--cache-dir", str(folder / cache), "--json", str(folder / f"{cache}.json")]
    return subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(run: subprocess.Popen) -> dict:
    out, _ = communicate(run)
    assert run.returncode == 0, out[-3000:]
    return json.loads(Path(run.args[-1]).read_text())


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_a_killed_eval_is_resumed_redoing_only_the_episodes_in_flight(tmp_path):
    (tmp_path / "slow_oracle.py").write_text(SLOW_ORACLE)
    killed = _eval(tmp_path, "cache", 0.05, "ended-killed")
    while _lines(tmp_path / "ended-killed") < 6 * BATCH and killed.poll() is None:  # readiness, however slow
        time.sleep(0.01)
    os.kill(killed.pid, signal.SIGKILL)  # well past the first batch (2 * BATCH episodes): the rest is in flight
    communicate(killed)
    ended_before_kill = _lines(tmp_path / "ended-killed")

    resumed = _finish(_eval(tmp_path, "cache", 0, "ended-resumed"))
    cold = _finish(_eval(tmp_path, "cold", 0, "ended-cold"))
    episodes = cold["meta"]["episodes_run"]
    assert ended_before_kill >= 6 * BATCH and episodes > ended_before_kill + 2 * BATCH, (ended_before_kill, episodes)
    # Every episode that ended before the kill was stored: the resumed run ran only those that had not ended.
    redone = ended_before_kill + resumed["meta"]["episodes_run"] - episodes
    assert redone <= 0, f"{redone} episodes that ended before the kill ran again"
    assert _lines(tmp_path / "ended-resumed") == resumed["meta"]["episodes_run"]
    assert resumed["records"] == cold["records"]


class Interrupted(OracleAgent):
    """The oracle, interrupted (as by Ctrl-C) at its ``stop_at``-th batch."""

    def __init__(self, stop_at: int) -> None:
        self.stop_at = stop_at
        self.batches = 0
        self.turns = 0

    def fingerprint(self):
        return "interrupted-oracle-v1"

    def act(self, turns):
        self.batches += 1
        if self.batches == self.stop_at:
            raise KeyboardInterrupt
        self.turns += len(turns)
        return super().act(turns)


def test_each_episode_is_stored_as_it_ends_not_when_its_batch_ends(tmp_path):
    cases = [Case(t) for t in tasks("poi", "test", 24)]
    agent = Interrupted(stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        core.EpisodeCache(tmp_path).run(agent, cases, window=6)
    ended = sum(p.read_bytes().count(b"\n") for p in tmp_path.glob("*/pack-*.jsonl"))
    assert ended >= 6, "episodes that ended in the first rounds were not stored before the interruption"

    again = core.EpisodeCache(tmp_path)
    resumed = again.run(Interrupted(stop_at=0), cases, window=6)
    assert again.hits == ended and again.misses == len(cases) - ended
    fresh = core.EpisodeCache(None).run(Interrupted(stop_at=0), cases, window=6)
    assert [e.model_dump() for e in resumed] == [e.model_dump() for e in fresh]
