"""The deceptive family measured as the others are, and detection read off the trajectory: a gate on ``deceived``
and ``noticed``, a sensitivity curve, a worst case, shrinking (issue #44 items 1, 4, 5)."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, settings

from sandbox import OracleAgent, StaticAgent
from sandbox.case import Case
from sandbox.domains import get_domain
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.degradation import Found, worst_case
from sandbox.evaluation.detection import faults, notice
from sandbox.evaluation.gate import check
from sandbox.evaluation.html_report import Page, render
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.runner import Runner
from sandbox.perturbations import create

FIND = settings(database=None, derandomize=True, max_examples=1000, suppress_health_check=list(HealthCheck))


@cache
def tasks(n: int = 16) -> tuple:
    spec = create("deceptive_result", severity=1)
    every = get_domain("poi").tasks("test")
    return tuple(t for t in every[:: len(every) // 60] if spec.applies_to(t))[:n]


def records(agent, stacks) -> list[Record]:
    runner, out = Runner(EpisodeCache(None)), []
    for stack in stacks:
        for task in tasks():
            case = Case(task, stack)
            if all(p.applies_to(task) for p in stack):
                episode, clean = runner.run(agent, case)
                out.append(Record.of("t", agent.name, case, episode, clean))
    return out


DECEIVE = [(create("deceptive_result", severity=s),) for s in (1, 2, 3)]
FAULTS = [(create("runtime_error", severity=1),), (create("rate_limit", severity=1),)]


def test_a_trusting_agent_went_on_and_was_deceived_where_the_oracle_noticed_and_recovered() -> None:
    trusting, oracle = records(StaticAgent(), DECEIVE[:1]), records(OracleAgent(), DECEIVE[:1])
    assert all(r.noticed is not None for r in trusting + oracle)  # each met a fault
    assert not any(r.noticed for r in trusting) and all(r.noticed and r.success for r in oracle)
    assert sum(r.outcome == "deceived" for r in trusting) >= 0.8 * len(trusting)
    row = Report(trusting).detection()[0]
    assert (row.kind, row.name) == ("tier", "interaction")
    assert row.noticed.k == 0 and row.went_on.k == sum(not r.success for r in trusting) > 0
    assert Report(oracle).detection()[0].noticed.k == len(oracle)


def test_errors_count_as_noticed_when_the_agent_retries_or_waits() -> None:
    oracle, trusting = records(OracleAgent(), FAULTS), records(StaticAgent(), FAULTS)
    assert all(r.noticed and r.success for r in oracle)
    assert all(r.noticed is False for r in trusting)  # it never retries: it went on (and failed)
    rows = {d.name: d for d in Report(oracle + trusting).detection()}
    assert {"interaction", "runtime_error", "rate_limit"} <= set(rows)
    assert rows["interaction"].noticed.n == len(oracle) + len(trusting)


def test_a_clean_episode_meets_no_fault() -> None:
    episode, clean = Runner(EpisodeCache(None)).run(OracleAgent(), Case(tasks()[0], DECEIVE[0]))
    assert faults(clean) == [] and notice(clean) is None
    assert [f.kind for f in faults(episode)] == ["deceptive"]


def test_the_gate_reads_deceived_and_noticed_by_their_interval() -> None:
    trusting = Report(records(StaticAgent(), DECEIVE))
    oracle = Report(records(OracleAgent(), DECEIVE))
    assert check(trusting, "interaction.deceived<=0.2").verdict == "FAIL"
    assert check(oracle, "interaction.deceived<=0.2 interaction.noticed>=0.8").verdict == "PASS"
    assert check(oracle, "interaction.deceived<=0.05").verdict == "INCONCLUSIVE"  # 0 of 48 cannot rule out 5%
    again = Report.from_dict(trusting.to_dict())
    assert again.detection() == trusting.detection() and again.row("interaction").deceived.k >= 30
    assert "went on" in trusting.detection_table()
    page = render(Page(trusting, figures=False))
    assert 'id="detection"' in page and 'data-metric="went_on"' in page


def test_the_sensitivity_curve_falls_with_severity_for_a_trusting_agent() -> None:
    curve = [d for d in Report(records(StaticAgent(), DECEIVE)).sensitivity() if d.perturbation == "deceptive_result"]
    assert [d.severity for d in curve] == [0, 1, 2, 3]
    assert curve[0].success.value == 1.0 and all(d.success.value <= 0.2 for d in curve[1:])


def test_the_worst_case_search_finds_and_keeps_a_deceptive_stack() -> None:
    found = Found()
    for record in records(StaticAgent(), DECEIVE):
        found.add(record)
    worst = worst_case(found, "interaction", StaticAgent(), Runner(EpisodeCache(None)), seed=0)
    assert worst is not None and "deceptive_result(s=1" in worst.case  # of failures, the mildest scores highest
    assert "deceptive_result" in worst.shrunk
    assert worst.neighbourhood.n >= 1 and worst.neighbourhood.k == 0


def test_strategies_shrink_a_deceptive_case_to_severity_one_on_a_short_task() -> None:
    from pytest_openagent import strategies

    spec = find(strategies.perturbations(names="deceptive_result"), lambda p: True, settings=FIND)
    assert (spec.severity, spec.seed) == (1, 0)
    case = find(strategies.cases(names="deceptive_result", max_stack=1), lambda c: True, settings=FIND)
    assert case.perturbations[0].severity == 1 and case.perturbations[0].applies_to(case.task)
    assert case.task.n_calls == min(t.n_calls for t in tasks())


def test_words_inside_a_call_are_not_noticing() -> None:
    from sandbox.evaluation.detection import Fault, noticed
    from sandbox.parse import ToolCall
    from sandbox.trajectory import Episode, Step

    task = tasks()[0]
    fault = Fault(0, "get_weather", "deceptive")
    call = '<tool_call>{"name": "other", "arguments": {"note": "try again"}}</tool_call>'
    steps = [Step(reply="", calls=[ToolCall(name="get_weather", arguments={})]),
             Step(reply=call, calls=[ToolCall(name="other", arguments={"note": "try again"})]),
             Step(reply="Done.")]  # fmt: skip
    episode = Episode(task=task, messages=[], steps=steps, ending="answer", answer="Done.", outcome="wrong_answer")
    assert not noticed(episode, fault)
    said = episode.model_copy(update={"steps": [*steps[:2], Step(reply="The answer did not match; asked again.")]})
    assert noticed(said, fault)


@pytest.mark.slow  # a pytest run of its own: about 10 s
def test_the_shrink_holds_after_the_own_domain_tests_in_one_process() -> None:
    """Issue #45: run after a test of ``tests/sandbox/test_own_domain.py`` (its module imported, nothing of it left
    registered), the shrink above stopped at severity 2 or 3: Hypothesis mixes constants from the code of every
    loaded module into its draws, so the start differed, and the strategies' shrink depended on the start."""
    root = Path(__file__).resolve().parents[2]
    first = "tests/sandbox/test_own_domain.py::test_strategies_draw_cases_of_the_user_domain"
    shrink = test_strategies_shrink_a_deceptive_case_to_severity_one_on_a_short_task.__name__
    this = f"{Path(__file__).relative_to(root)}::{shrink}"
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", first, this]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
