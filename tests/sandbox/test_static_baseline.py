"""The static baseline means the same on every world with gold plans: the clean gold plan replayed by the clean
names, blind to what a perturbation changes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

import sandbox
from sandbox import Call, StaticAgent, ToolFailure, UserTask
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.perturbations import get

BOOKS = {"b1": ("Dune", "Frank Herbert"), "b2": ("Emma", "Jane Austen")}


@dataclass
class Shelf:
    seed: int
    loans: list[str] = field(default_factory=list)


@sandbox.tool
def search_books(shelf: Shelf, author: str) -> dict:
    """Find the books of an author.

    Args:
        author: the author's full name, e.g. Jane Austen
    """
    found = [{"book_id": i, "title": t} for i, (t, a) in BOOKS.items() if a == author]
    if not found:
        raise ToolFailure("not_found", f"no book by {author!r}")
    return {"results": found}


@sandbox.tool(role="write")
def lend(shelf: Shelf, book_id: str) -> dict:
    """Lend a book.

    Args:
        book_id: a book id, e.g. b1
    """
    shelf.loans.append(book_id)
    return {"lent": book_id, "due": "2026-12-24"}


@pytest.fixture(scope="module")
def shelf() -> Iterator[sandbox.Domain]:
    domain = sandbox.define_domain(
        "static-shelf", tools=[search_books, lend], state=lambda seed: Shelf(seed),
        tasks=[
            UserTask("Name a book by Jane Austen.", id="title", answer={"title": "Emma"},
                     plan=[Call(id="s", tool="search_books", args={"author": "Jane Austen"})]),
            UserTask("Lend me the first book by Frank Herbert; when is it due?", id="lend", sources={"due": "l.due"},
                     plan=[Call(id="s", tool="search_books", args={"author": "Frank Herbert"}),
                           Call(id="l", tool="lend", args={"book_id": "b1"}, after=("s",))]),
            UserTask("Renew my loan.", id="renew", unsolvable="missing_capability"),
        ],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    yield domain
    DOMAINS.pop(domain.name, None)  # a test of every registered domain must not meet it


def test_on_a_users_world_it_replays_the_clean_gold_plan(shelf) -> None:
    episodes = run_cases(StaticAgent(), [Case(t) for t in shelf.tasks()])
    assert [e.outcome for e in episodes] == ["success", "success", "refused"], episodes[0].explain()
    assert [c.name for c in episodes[1].calls] == ["search_books", "lend"]
    untrained = Case(shelf.tasks()[0]).run(StaticAgent(("poi", "medical")))  # a world it was not trained on
    assert untrained.answer == "Done." and not untrained.calls


def test_on_a_users_world_it_is_blind_to_what_a_perturbation_changes(shelf) -> None:
    task = next(t for t in shelf.tasks() if t.id.endswith("lend"))
    renamed = Case(task, (get("tool_name_noise")(severity=1),)).run(StaticAgent())
    assert renamed.outcome != "success" and renamed.calls[0].name == "search_books"
    reworded = Case(task, (get("query_paraphrase")(severity=1),))
    assert reworded.env().query() != task.query
    assert reworded.run(StaticAgent()).answer == "Done."  # a request not worded as in training


def test_on_bfcl_it_replays_each_turns_gold_calls_as_the_replayer_does() -> None:
    from sandbox.domains.bfcl.replayer import GoldReplayer

    tasks = sandbox.get_domain("bfcl").tasks("test", 20)
    static = run_cases(StaticAgent(), [Case(t) for t in tasks])
    gold = run_cases(GoldReplayer(), [Case(t) for t in tasks])
    assert [e.outcome for e in static] == [e.outcome for e in gold]
    assert [[c.name for c in e.calls] for e in static] == [[c.name for c in e.calls] for e in gold]
