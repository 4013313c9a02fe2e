"""``deceptive_result``: a plausible wrong answer where the world holds a cross-check, proven solvable, judged."""

from __future__ import annotations

from functools import cache

import pytest

from sandbox import OracleAgent, StaticAgent
from sandbox.case import Case, run_cases
from sandbox.domains import get_domain
from sandbox.judge import deceived
from sandbox.perturbations import get
from sandbox.perturbations.echo import contradicts, echoes
from sandbox.perturbations.interaction.deception import DeceptiveResult, lies
from sandbox.state import Deception

ORACLE = OracleAgent()


@cache
def applied(domain: str, severity: int, n: int = 40) -> tuple[Case, ...]:
    """The cases of ``domain``'s test split (one in every few, for speed) the family applies to."""
    spec = DeceptiveResult(severity=severity, seed=3)
    tasks = get_domain(domain).tasks("test")[:: max(1, len(get_domain(domain).tasks("test")) // n)]
    return tuple(Case(t, (spec,)) for t in tasks if spec.applies_to(t))


def test_the_echo_rule_reads_names_only() -> None:
    assert echoes({"place_id": "P1", "day": "monday"}, {"id": "P1", "day": "Monday", "hours": "9-5"}) == [
        ("place_id", "id"), ("day", "day")]  # fmt: skip
    assert contradicts({"place_id": "P1"}, {"id": "P2", "hours": "9-5"})
    assert not contradicts({"place_id": "P1"}, {"hours": "9-5"})  # no echo, nothing to compare
    assert not contradicts({"city": "Turin"}, {"city": " turin "})


def test_it_applies_only_where_an_answer_echoes_its_request() -> None:
    poi = {t.family: t for t in get_domain("poi").tasks("test")}
    assert lies(poi["phone"]) and lies(poi["hours"]) and lies(poi["weather"])
    assert not DeceptiveResult().applies_to(poi["best_rated"])  # a search's rows echo nothing
    assert not DeceptiveResult().applies_to(poi["taxi"])  # no call, no answer to lie in
    for lie in lies(poi["phone"]):
        assert lie.instead and all(other != lie.args for other in lie.instead)


@pytest.mark.parametrize("domain", ["poi", "medical"])
@pytest.mark.parametrize("severity", [1, 2, 3])
def test_the_oracle_solves_every_applied_case_by_cross_checking(domain: str, severity: int) -> None:
    cases = applied(domain, severity)
    assert len(cases) >= 10
    episodes = run_cases(ORACLE, cases)
    for episode in episodes:
        assert episode.deceptions, episode.explain()  # a lie was served...
        assert episode.outcome == "success", episode.explain()  # ...and the oracle saw through it
    assert all(len(e.calls) > e.task.n_calls for e in episodes)  # it asked again


@pytest.mark.parametrize("domain", ["poi", "medical"])
def test_an_agent_that_trusts_the_first_answer_is_deceived(domain: str) -> None:
    episodes = run_cases(StaticAgent(), applied(domain, 1))
    outcomes = [e.outcome for e in episodes]
    assert outcomes.count("deceived") >= 0.8 * len(outcomes), outcomes
    assert set(outcomes) <= {"deceived", "success"}  # a success only where the other entity's value matches


def test_the_deceived_outcome_needs_a_wrong_value_reported_or_acted_on() -> None:
    task = next(t for t in get_domain("poi").tasks("test") if t.family == "phone")
    lie = [Deception("find_place", 0, (("P999", "P332"), ("Other Books", task.params.get("name", ""))))]
    assert deceived("wrong_answer", task, "The phone is 555-0000.", [[{}], [{"place_id": "P999"}]], lie) == "deceived"
    assert deceived("wrong_answer", task, "It is Other Books, 555-0000.", [[{}]], lie) == "deceived"
    assert deceived("wrong_answer", task, "The phone is 555-0000.", [[{}], [{"place_id": "P332"}]], lie) == (
        "wrong_answer")  # fmt: skip
    assert deceived("success", task, "P999?", [[{}]], lie) == "success"  # it recovered
    assert deceived("wrong_answer", task, "P999", [[{}]], []) == "wrong_answer"  # nothing was served


def test_severity_zero_changes_nothing_and_severities_lie_more() -> None:
    case = next(c for c in applied("poi", 2) if len(lies(c.task, 3)) >= 2)
    served = []
    for severity in (0, 1, 2, 3):
        episode = Case(case.task, (DeceptiveResult(severity=severity, seed=3),)).run(ORACLE)
        assert episode.outcome == "success", episode.explain()
        served.append(len(episode.deceptions))
    assert served[0] == 0 and served[1] == 1 and served[2] >= 2 and served[3] >= served[2]


def test_it_drifts_and_round_trips() -> None:
    spec = get("deceptive_result")(severity=2, seed=1, after=1)
    assert DeceptiveResult.model_validate_json(spec.model_dump_json()) == spec
    case = next(c for c in applied("medical", 2) if c.task.n_calls >= 2)
    episode = Case(case.task, (spec,)).run(ORACLE)
    assert episode.outcome == "success", episode.explain()


def test_on_a_users_world_too() -> None:
    import importlib.util
    from pathlib import Path

    from sandbox.domains import DOMAINS, register_domain

    path = Path(__file__).resolve().parents[2] / "examples" / "own_tools" / "bookshop.py"
    spec_of = importlib.util.spec_from_file_location("bookshop_for_deception", path)
    module = importlib.util.module_from_spec(spec_of)
    spec_of.loader.exec_module(module)
    shop = register_domain(module.SHOP, replace=True)
    try:
        spec = DeceptiveResult(severity=1)
        cases = [Case(t, (spec,)) for t in shop.tasks("test") if spec.applies_to(t)]
        assert cases, "the bookshop's get_book echoes its book_id: it must apply"
        for episode in run_cases(ORACLE, cases):
            assert episode.deceptions and episode.outcome == "success", episode.explain()
        static = run_cases(StaticAgent(), cases)
        assert any(e.outcome == "deceived" for e in static)
    finally:
        DOMAINS.pop(shop.name, None)
