"""Drift: a perturbation with an onset starts after turn k; the agent sees the new tool list with a notice, the oracle
follows it on every applied case, and a drift case replays identically."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sandbox.agents import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.domains import get_domain
from sandbox.perturbations import create, from_dict, get, names
from sandbox.prompt import LIST_CHANGED
from sandbox.task import Task
from tests.toys import FirstTools

DRIFTING = [n for n in names() if get(n).can_drift()]


def _task(domain: str, waves: int = 2) -> Task:
    return next(t for t in get_domain(domain).tasks("test") if len(t.waves()) >= waves and t.solvable)


def test_an_onset_is_printed_round_trips_and_keys_the_case() -> None:
    spec = create("tool_name_noise", severity=2, after=3)
    assert spec.label() == "tool_name_noise(s=2,eval,after=3)"
    assert from_dict(spec.to_dict()) == spec and spec.to_dict()["after"] == 3
    assert "after" not in spec.static().to_dict(), "a static spec keeps the JSON (and the cache key) it always had"
    task = _task("poi")
    assert Case(task, (spec,)).key() != Case(task, (spec.static(),)).key()
    assert Case.from_dict(Case(task, (spec,)).to_dict()).key() == Case(task, (spec,)).key()


@pytest.mark.parametrize("name", ["query_paraphrase", "dependency_merge", "domain_transfer"])
def test_a_perturbation_that_cannot_drift_refuses_an_onset(name: str) -> None:
    with pytest.raises(ValueError, match="cannot start mid-episode"):
        create(name, after=1)


def test_the_agent_sees_the_new_tool_list_after_the_onset_with_a_notice() -> None:
    task = _task("poi")
    episode = run_cases(OracleAgent(), [Case(task, (create("tool_name_noise", severity=2, after=1),))])[0]
    assert episode.success, episode.explain()
    first, second = episode.steps[0].calls[0].name, episode.steps[1].calls[0].name
    clean = {t["function"]["name"] for t in get_domain("poi").toolbox.specs()}
    assert first in clean and second not in clean, "one turn in the world as it was, then the drift"
    notices = [i for i, m in enumerate(episode.messages) if str(m.get("content", "")).startswith(LIST_CHANGED)]
    assert len(notices) == 1 and second in episode.messages[notices[0]]["content"]
    assert episode.messages[notices[0] - 1]["role"] == "tool", "the notice comes after the first turn's results"


def test_a_drift_that_leaves_the_tool_list_as_it_was_sends_no_notice() -> None:
    episode = Case(_task("poi"), (create("runtime_error", severity=1, after=1),)).run(OracleAgent())
    assert episode.success
    assert not any(str(m.get("content", "")).startswith(LIST_CHANGED) for m in episode.messages)
    assert episode.steps[0].results[0].ok and episode.steps[1].results[0].error == "runtime_error"


def test_a_tool_withdrawn_for_good_mid_episode_makes_a_case_to_refuse() -> None:
    task = _task("poi", waves=2)
    case = Case(task, (create("missing_capability", after=1),))
    assert case.solvable is False and Case(task).solvable
    episode = case.run(OracleAgent())
    assert episode.outcome == "refused", episode.explain()
    assert episode.steps[0].results[0].ok, "the first turn met the tool list as it was"
    one_wave = next(t for t in get_domain("poi").tasks("test") if len(t.waves()) == 1 and t.plan)
    assert not create("missing_capability", after=1).applies_to(one_wave), "nothing is left to withdraw after turn 1"


def test_a_drift_case_replays_identically() -> None:
    case = Case(_task("medical"), (create("semantic_renaming", severity=2, after=1, seed=3),))
    again = Case.from_dict(case.to_dict())
    first, second = run_cases(OracleAgent(), [case]), run_cases(OracleAgent(), [again])
    assert first[0].model_dump() == second[0].model_dump()
    assert first[0].perturbation == second[0].perturbation and "after=1" in first[0].perturbation


def test_an_agent_that_keeps_the_first_tool_list_fails_under_drift_only() -> None:
    task = _task("poi")
    static, drift = create("tool_name_noise", severity=1), create("tool_name_noise", severity=1, after=1)
    agent = FirstTools()
    clean, before, during = run_cases(agent, [Case(task), Case(task, (static,)), Case(task, (drift,))])
    assert clean.success and before.success, "the first tool list is the right one when nothing changes after it"
    assert not during.success and during.steps[1].results[0].error == "unknown_tool"


def drift_cases(domain: str, tasks: Sequence[Task], onsets: Sequence[int] = (1, 2)) -> list[Case]:
    """Every drifting perturbation at each severity and onset, on each task it applies to."""
    cases = []
    for name in DRIFTING:
        cls = get(name)
        for severity in cls.severities():
            for after in onsets:
                spec = cls(severity=severity, after=after, seed=after)
                cases += [Case(t, (spec,)) for t in tasks if spec.applies_to(t)]
    return cases


def oracle_wrong(cases: list[Case]) -> list[str]:
    """The oracle's episodes that neither solve a solvable case nor refuse an unsolvable one, explained."""
    episodes = run_cases(OracleAgent(), cases)
    return [e.explain() for c, e in zip(cases, episodes, strict=True)
            if e.outcome != ("success" if c.solvable else "refused")]  # fmt: skip


def _sample(domain: str, n: int) -> list[Task]:
    """Tasks of every family, longest plans first: the drift has turns to arrive in."""
    by_family: dict[str, list[Task]] = {}
    for task in get_domain(domain).tasks("test"):
        by_family.setdefault(task.family, []).append(task)
    picked = [max(tasks, key=lambda t: len(t.waves())) for tasks in by_family.values()]
    return picked[:n]


@pytest.mark.parametrize("domain", ["poi", "medical"])
def test_the_oracle_is_right_on_every_applied_drift_case(domain: str) -> None:
    cases = drift_cases(domain, _sample(domain, 40))
    assert {p.name for c in cases for p in c.perturbations} == set(DRIFTING)
    wrong = oracle_wrong(cases)
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n\n" + "\n\n".join(wrong[:2])


def test_the_oracle_is_right_on_drift_cases_of_bfcl() -> None:
    tasks = [t for t in get_domain("bfcl").tasks("test") if len(t.waves()) >= 3][:2]
    wrong = oracle_wrong(drift_cases("bfcl", tasks, onsets=(1,)))
    assert not wrong, "\n\n".join(wrong[:2])


@pytest.mark.slow
def test_the_oracle_is_right_on_every_applied_drift_case_of_bfcl() -> None:
    tasks = list(get_domain("bfcl").tasks("test"))[:30]
    wrong = oracle_wrong(drift_cases("bfcl", tasks, onsets=(1, 2, 3)))
    assert not wrong, f"{len(wrong)} wrong:\n\n" + "\n\n".join(wrong[:2])
