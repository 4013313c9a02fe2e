"""Framework agents close what they open: each episode's event loop (its selector's descriptors and its
executor's threads) is closed when the episode ends, not left to the garbage collector, so the descriptors a run
holds stay flat however many episodes it runs. Each run is a subprocess under a descriptor limit, the garbage
collector off (so nothing is freed but what is closed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sandbox.agents.frameworks.played import FRAMEWORKS
from tests import processes
from tests.frameworks.test_adapters import _framework

ROOT = Path(__file__).resolve().parents[2]
RUN = """
import gc, json, os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))
gc.disable()
import sandbox
from sandbox.agents.frameworks.played import played_through

fds = lambda: len(os.listdir("/proc/self/fd"))
tasks = sandbox.tasks("poi", "test", {n})
agent = played_through({framework!r}, sandbox.OracleAgent())
seen = []
episodes = sandbox.run_episodes(agent, [sandbox.make_env("poi", t) for t in tasks], window={window},
                                on_end=lambda i, e: seen.append(fds()))
print(json.dumps({{"outcomes": [e.outcome for e in episodes], "errors": [e.steps[-1].error for e in episodes
                  if e.outcome == "agent_error"][:3], "fds": seen}}))
"""


def run(framework: str, n: int, limit: int, window: int) -> dict:
    code = RUN.format(framework=framework, n=n, limit=limit, window=window)
    done = processes.run([sys.executable, "-c", code], cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f != "python"])
def test_descriptors_stay_flat_over_many_framework_episodes(framework):
    found = run(_framework(framework), n=120, limit=64, window=8)
    assert len(found["outcomes"]) == 120 and "agent_error" not in found["outcomes"], found["errors"]
    first, last = max(found["fds"][:40]), max(found["fds"][-40:])
    assert last <= first + 3, (first, last)  # flat: the last episodes hold no more than the first did


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["pydantic-ai", "openai-agents"])
def test_a_thousand_framework_episodes_under_a_256_descriptor_limit_none_failed(framework):
    found = run(_framework(framework), n=1000, limit=256, window=32)
    assert len(found["outcomes"]) == 1000 and "agent_error" not in found["outcomes"], found["errors"]
    assert max(found["fds"][-200:]) <= max(found["fds"][:200]) + 3
