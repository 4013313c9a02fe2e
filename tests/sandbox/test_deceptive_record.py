"""``deceptive_record``: another entity's record under the key asked for, that an earlier answer (a second tool)
contradicts; proven solvable by taking that cross-check, judged apart."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import sandbox
from sandbox import Call, OracleAgent, StaticAgent, UserTask
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS, get_domain, register_domain
from sandbox.perturbations import get
from sandbox.perturbations.echo import contradicts
from sandbox.perturbations.interaction.misfiled import DeceptiveRecord, misfilings, refile
from sandbox.perturbations.witness import contradicted, disagree, records, shared
from sandbox.vocabulary import DomainVocabulary

ORACLE = OracleAgent()
BOOKSHOP = Path(__file__).resolve().parents[2] / "examples" / "own_tools" / "bookshop.py"


@cache
def applied(domain: str, severity: int, n: int = 80) -> tuple[Case, ...]:
    """The cases of ``domain``'s test split (one in every few, for speed) the family applies to."""
    spec = DeceptiveRecord(severity=severity, seed=3)
    every = get_domain(domain).tasks("test")
    return tuple(Case(t, (spec,)) for t in every[:: max(1, len(every) // n)] if spec.applies_to(t))


def test_the_witness_rule_reads_names_and_values_only() -> None:
    found = {"results": [{"id": "P1", "name": "Oak", "rating": 4.2}, {"id": "P2", "name": "Elm", "rating": 3.0}]}
    assert records(found, "P2") == [{"id": "P2", "name": "Elm", "rating": 3.0}]
    assert records({"n": 7, "room_id": 7}, 7) and not records({"n": 7}, 7)  # a bare number names no entity
    args = {"place_id": "P2"}
    true = {"id": "P2", "name": "Elm", "rating": 3.0, "phone": "555"}
    pairs = [("name", "name"), ("rating", "rating")]
    assert shared(records(found, "P2")[0], args, true, "P2") == pairs  # the key and echoes aside
    assert not contradicted(found, args, true, "P2")
    told = {"id": "P2", "name": "Birch", "rating": 4.9, "phone": "556"}
    assert disagree(records(found, "P2")[0], args, told, "P2") == pairs
    assert contradicted(found, args, told, "P2") and not contradicts(args, told)  # its echo agrees: only a witness
    assert not contradicted(found, args, {"id": "P2", "phone": "556"}, "P2")  # no field in common: nothing to tell
    assert refile({"place_id": "P2"}, true, {"id": "P9", "name": "Birch"}) == {"id": "P2", "name": "Birch"}
    renamed = {"id": "P2", "title": "Birch"}  # the same fact under another name: compared only where declared
    assert not contradicted(found, args, renamed, "P2") and contradicted(found, args, renamed, "P2", {"title": "name"})


def test_it_applies_only_where_an_earlier_answer_witnesses_the_record() -> None:
    poi = {t.family: t for t in get_domain("poi").tasks("test")}
    for family in ("phone", "best_phone_hours"):  # find_place / search_places rows, then get_place_details
        (lie,) = misfilings(poi[family])
        assert lie.tool == "get_place_details" and {"name"} <= set(lie.fields) and lie.instead
    for family in ("hours", "weather", "best_rated", "distance", "book_named", "taxi"):
        assert not DeceptiveRecord().applies_to(poi[family]), family  # no second source, or a write, or no call
    medical = {t.family: t for t in get_domain("medical").tasks("test")}
    assert misfilings(medical["blood_type"])[0].fields == ("name", "birth_year")
    assert not DeceptiveRecord().applies_to(medical["lab_value"])  # lab results share no field with the lookup


@pytest.mark.parametrize("domain", ["poi", "medical"])
@pytest.mark.parametrize("severity", [1, 2, 3])
def test_the_oracle_solves_every_applied_case_by_taking_the_cross_check(domain: str, severity: int) -> None:
    cases = applied(domain, severity)
    assert len(cases) >= 8
    for episode in run_cases(ORACLE, cases):
        assert episode.deceptions, episode.explain()  # a record was misfiled...
        assert episode.outcome == "success", episode.explain()  # ...and the oracle saw through it
        lying = {d["tool"] for d in episode.deceptions}
        asked = [c.name for c in episode.calls]
        assert all(asked.count(tool) > 1 for tool in lying), episode.explain()  # by asking again


def test_without_the_second_source_the_oracle_is_deceived_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from sandbox.agents.oracle import cross_check

    monkeypatch.setattr(cross_check, "witnesses", lambda domain, task: ())  # the echo rule alone
    outcomes = [e.outcome for e in run_cases(ORACLE, applied("poi", 1))]
    assert outcomes.count("deceived") == len(outcomes), outcomes


@pytest.mark.parametrize("domain", ["poi", "medical"])
def test_an_agent_that_trusts_the_record_is_deceived(domain: str) -> None:
    outcomes = [e.outcome for e in run_cases(StaticAgent(), applied(domain, 1))]
    assert outcomes.count("deceived") >= 0.6 * len(outcomes), outcomes
    # a success where the other entity's record gives the same answer; wrong_answer where the told value is one
    # the task itself gives (the judge cannot tell it from the agent's own)
    assert set(outcomes) <= {"deceived", "success", "wrong_answer"}


def test_severity_zero_changes_nothing_and_severities_lie_more() -> None:
    case = next(c for c in applied("medical", 2) if len(misfilings(c.task, 3)) >= 1)
    served = []
    for severity in (0, 1, 2, 3):
        episode = Case(case.task, (DeceptiveRecord(severity=severity, seed=3),)).run(ORACLE)
        assert episode.outcome == "success", episode.explain()
        served.append(len(episode.deceptions))
    assert served == [0, 1, 1, 2]


def test_it_drifts_and_round_trips() -> None:
    spec = get("deceptive_record")(severity=3, seed=1, after=1)
    assert DeceptiveRecord.model_validate_json(spec.model_dump_json()) == spec
    case = next(c for c in applied("poi", 3) if c.task.n_calls >= 2)
    episode = Case(case.task, (spec,)).run(ORACLE)
    assert episode.outcome == "success" and len(episode.deceptions) == 2, episode.explain()


def _bookshop(name: str):
    spec_of = importlib.util.spec_from_file_location(name, BOOKSHOP)
    module = importlib.util.module_from_spec(spec_of)
    spec_of.loader.exec_module(module)
    return module


def test_on_a_users_world_the_search_row_witnesses_the_book() -> None:
    shop = register_domain(_bookshop("bookshop_for_records").SHOP, replace=True)
    try:
        spec = DeceptiveRecord(severity=1)
        cases = [Case(t, (spec,)) for t in shop.tasks("test") if spec.applies_to(t)]
        assert [c.task.id for c in cases] == ["bookshop-chain"]  # search_books' row of b2, then get_book(b2)
        (episode,) = run_cases(ORACLE, cases)
        assert episode.deceptions and episode.outcome == "success", episode.explain()
        (trusting,) = run_cases(StaticAgent(), cases)
        assert trusting.outcome == "deceived", trusting.explain()
    finally:
        DOMAINS.pop(shop.name, None)


@dataclass
class _Shelf:
    seed: int


_BOOKS = {"b1": ("Dune", "Frank Herbert"), "b2": ("Emma", "Jane Austen"), "b3": ("Persuasion", "Jane Austen")}


@sandbox.tool
def list_ids(shelf: _Shelf, author: str) -> dict:
    """The ids of an author's books.

    Args:
        author: the author's full name
    """
    return {"ids": [i for i, (_, a) in _BOOKS.items() if a == author]}


@sandbox.tool
def list_books(shelf: _Shelf, author: str) -> dict:
    """An author's books, each with its id and its name.

    Args:
        author: the author's full name
    """
    return {"rows": [{"id": i, "name": t} for i, (t, a) in _BOOKS.items() if a == author]}


@sandbox.tool
def get_book(shelf: _Shelf, book_id: str) -> dict:
    """One book's title and author.

    Args:
        book_id: a book id from list_ids or list_books
    """
    return {"book_id": book_id, "title": _BOOKS[book_id][0], "author": _BOOKS[book_id][1]}


def _shelf(lookup: str, vocabulary: DomainVocabulary | None = None) -> sandbox.Domain:
    def plan(author: str, book_id: str) -> list[Call]:
        return [Call(id="s", tool=lookup, args={"author": author}),
                Call(id="g", tool="get_book", args={"book_id": book_id}, after=("s",))]  # fmt: skip

    shelf = sandbox.define_domain(
        f"shelf_{lookup}",
        tools=[list_ids, list_books, get_book],
        state=_Shelf,
        vocabulary=vocabulary,
        tasks=[UserTask("Who wrote Jane Austen's first book? Its author field.", id="a", plan=plan("Jane Austen", "b2"),
                        sources={"author": "g.author"}),
               UserTask("Title of Frank Herbert's first book?", id="b", plan=plan("Frank Herbert", "b1"),
                        sources={"title": "g.title"})],
    )  # fmt: skip
    return register_domain(shelf, replace=True)


def test_a_world_without_a_second_source_gets_no_case() -> None:
    shelf = _shelf("list_ids")
    try:
        tasks = shelf.tasks("test")
        assert tasks and all(get("deceptive_result")().applies_to(t) for t in tasks)  # its echo: the other kind
        assert not any(DeceptiveRecord(severity=s).applies_to(t) for t in tasks for s in (1, 2, 3))  # ids only
    finally:
        DOMAINS.pop(shelf.name, None)


def test_a_user_declares_a_second_source_that_names_the_fact_otherwise() -> None:
    shelf = _shelf("list_books")  # its rows call the title "name"
    try:
        assert not any(DeceptiveRecord().applies_to(t) for t in shelf.tasks("test"))  # nothing named alike
    finally:
        DOMAINS.pop(shelf.name, None)
    shelf = _shelf("list_books", DomainVocabulary(same_fields={"title": "name"}))
    try:
        spec = DeceptiveRecord(severity=1)
        cases = [Case(t, (spec,)) for t in shelf.tasks("test")]
        assert all(spec.applies_to(c.task) for c in cases) and cases
        for episode in run_cases(ORACLE, cases):
            assert episode.deceptions and episode.outcome == "success", episode.explain()
        assert {e.outcome for e in run_cases(StaticAgent(), cases)} == {"deceived"}
    finally:
        DOMAINS.pop(shelf.name, None)
