"""faultbench's shop world (examples/faultbench, docs/worlds/faultbench.md), a world nobody here wrote, served
by faultbench's own MCP server: the oracle solves every task clean, and (slow) is right on every applied case
of every perturbation at every severity, in memory and over ``faultbench serve`` on stdio."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("faultbench", reason="needs the worlds extra: pip install 'pytest-openagent[worlds]'")

import sandbox
from sandbox.agents import OracleAgent
from sandbox.audits.check_domain import check_domain
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.domains.mcp import mcp_domain

HERE = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
TASKS = HERE / "shop_tasks.jsonl"


@pytest.fixture
def shop(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # shop_world, the tasks' inspect hook and the server factory
    from shop_world import server

    domain = mcp_domain(server, TASKS, name="faultbench-shop")
    sandbox.register_domain(domain, replace=True)
    yield domain
    DOMAINS.pop(domain.name, None)
    domain.close()


def test_the_oracle_solves_every_task_and_refuses_the_unsolvable_one(shop):
    tasks = shop.listed
    assert len(tasks) == 8 and sum(t.unsolvable is not None for t in tasks) == 1
    episodes = run_cases(OracleAgent(), [Case(t) for t in tasks])
    assert all(e.success for e in episodes), [e.explain() for e in episodes if not e.success]


@pytest.mark.slow
def test_check_domain_the_oracle_is_right_on_every_applied_case(shop):
    result = check_domain(shop.name, cache_dir=None)
    assert not result.failures, result.text()
    applied = {c.perturbation for c in result.cells if c.applied}
    assert {"missing_values", "runtime_error", "dependency_split", "fatal_error"} <= applied


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("faultbench") is None and not Path(sys.executable).with_name("faultbench").exists(),
                    reason="faultbench's command is not installed")  # fmt: skip
def test_over_faultbench_serve_on_stdio(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    command = shutil.which("faultbench") or str(Path(sys.executable).with_name("faultbench"))
    domain = mcp_domain(f"stdio:{command} serve {HERE / 'shop.yaml'}", TASKS, name="faultbench-stdio")
    sandbox.register_domain(domain, replace=True)
    try:
        result = check_domain(domain.name, names=["missing_values", "runtime_error"], cache_dir=None)
        assert result.ok, result.text()
        assert result.oracle_clean == 8
    finally:
        DOMAINS.pop(domain.name, None)
        domain.close()
