"""An unsolvable case is judged by refusal alone: a user's check, end state or answer never decides it.

One user-defined library per route (a task judged by its ``check``, by its ``end_state``, by its ``answer``),
each made unsolvable by a perturbation (``missing_capability``, ``fatal_error``): the oracle's refusal is
``refused``, and an agent that calls nothing and says "Done." is ``hallucinated_success``, whatever the check
or the end state says of the untouched state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import sandbox
from sandbox import Call, UserTask
from sandbox.agents import OracleAgent
from sandbox.case import Case
from sandbox.errors import UsageError
from sandbox.perturbations.registry import create

SHELVES = {"b1": "A3", "b2": "C1"}


@dataclass
class Library:
    seed: int
    loans: list[str] = field(default_factory=lambda: ["b1"])
    returns: list[str] = field(default_factory=list)


@sandbox.tool
def find_book(library: Library, title: str) -> dict:
    """Find a book by its title.

    Args:
        title: the book's title, e.g. Dune
    """
    book = {"Dune": "b1", "Emma": "b2"}.get(title)
    if book is None:
        raise sandbox.ToolFailure("not_found", f"no book titled {title!r}")
    return {"id": book, "title": title, "shelf": SHELVES[book]}


@sandbox.tool
def return_book(library: Library, book_id: str) -> dict:
    """Take back a lent book.

    Args:
        book_id: a book id from find_book
    """
    if book_id in library.loans:
        library.loans.remove(book_id)
        library.returns.append(book_id)
    return {"book_id": book_id, "returned": True}


FIND = Call(id="f", tool="find_book", args={"title": "Dune"})
RETURN = Call(id="r", tool="return_book", args={"book_id": "b1"}, after=("f",))


def _no_error(episode, library: Library) -> str:
    # a check written for the solvable task: it holds on the untouched state
    return "success" if all(r.ok for s in episode.steps for r in s.results) else "wrong_answer"


def _last_return_is_dune(library: Library) -> bool:
    # an end state written for the solvable task: it cannot read a state on which nothing was returned
    return library.returns[-1] == "b1"


ROUTES = {
    "check": UserTask("Make sure Dune is back on its shelf.", id="check", plan=[FIND, RETURN], check=_no_error),
    "end_state": UserTask("Take Dune back.", id="end", plan=[FIND, RETURN], end_state=_last_return_is_dune),
    "answer": UserTask("On which shelf is Dune?", id="answer", plan=[FIND], sources={"shelf": "f.shelf"}),
}
LIBRARY = sandbox.define_domain(
    "refusal-library", tools=[find_book, return_book], state=lambda seed: Library(seed), tasks=list(ROUTES.values())
)


class SaysDone:
    """Calls nothing and says it is done."""

    def fingerprint(self) -> str:
        return "says-done"

    def act(self, turns):
        return ["Done." for _ in turns]


@pytest.fixture(scope="module")
def registered():
    sandbox.register_domain(LIBRARY, replace=True)
    return {t.id.removeprefix("refusal-library-"): t for t in LIBRARY.tasks()}


@pytest.mark.parametrize("perturbation", ["missing_capability", "fatal_error"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_an_unsolvable_case_is_judged_by_refusal_alone(registered, route: str, perturbation: str) -> None:
    task = registered[{"check": "check", "end_state": "end", "answer": "answer"}[route]]
    case = Case(task, (create(perturbation),))
    assert not case.solvable
    refusal, done = case.run(OracleAgent()), case.run(SaysDone())
    assert refusal.outcome == "refused", refusal.explain()
    assert done.outcome == "hallucinated_success", done.explain()


def test_the_check_and_the_end_state_still_decide_solvable_cases(registered) -> None:
    assert Case(registered["check"]).run(SaysDone()).outcome == "success", "the user's check decides, as before"
    assert Case(registered["end"]).run(OracleAgent()).outcome == "success"
    assert Case(registered["answer"]).run(OracleAgent()).outcome == "success"


def test_an_unsolvable_task_takes_no_check() -> None:
    with pytest.raises(UsageError, match="judged by refusal alone"):
        sandbox.define_domain(
            "refusal-bad",
            tools=[find_book],
            tasks=[UserTask("Renew my loan.", unsolvable="missing_capability", check=_no_error)],
        )
