"""Side effects are audited: a write done more often than the gold plan does it is ``repeated_write``.

The world is a lending library whose loans are kept where a state snapshot cannot see them (a private ledger,
as a database would keep them): every call of ``lend`` lends one more copy, and answers the same due date.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import sandbox
from sandbox import Call, UserTask
from sandbox.agent import Reply
from sandbox.agents import OracleAgent
from sandbox.case import Case
from sandbox.judge import repeated_writes
from sandbox.perturbations.registry import create
from sandbox.state import Write

TITLES = {"Dune": "b1", "Emma": "b2"}


@dataclass
class Library:
    seed: int
    shelves: dict[str, str] = field(default_factory=lambda: {"b1": "A3", "b2": "C1"})
    _ledger: list[str] = field(default_factory=list)

    def lent(self, book_id: str) -> int:
        return self._ledger.count(book_id)


@sandbox.tool
def find_book(library: Library, title: str) -> dict:
    """Find a book by its title.

    Args:
        title: the book's title, e.g. Dune
    """
    book = TITLES[title]
    return {"id": book, "title": title, "shelf": library.shelves[book]}


def _lend(library: Library, book_id: str) -> dict:
    """Lend one copy of a book; each call lends one more.

    Args:
        book_id: a book id from find_book
    """
    library._ledger.append(book_id)
    return {"book_id": book_id, "due": "2026-12-24", "copies_out": library.lent(book_id)}


lend = sandbox.tool(_lend, name="lend")
FIND = Call(id="f", tool="find_book", args={"title": "Dune"})
LEND = Call(id="l", tool="lend", args={"book_id": "b1"}, after=("f",))
QUERY = "Lend me a copy of Dune; when is it due?"


def _library(name: str, *tools: sandbox.Tool, **task: object) -> sandbox.Domain:
    domain = sandbox.define_domain(
        name, tools=[find_book, *tools], state=lambda seed: Library(seed),
        tasks=[UserTask(QUERY, id="lend", plan=[FIND, LEND], sources={"due": "l.due"}, **task)],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    return domain


@pytest.fixture(scope="module")
def library() -> sandbox.Domain:
    """The task says what the loan must leave: Dune lent. Its gold call changes that, so ``lend`` is a write."""
    return _library("ledger-library", lend, end_state=lambda library: library.lent("b1") >= 1)


class LendsTwice:
    """Finds the book, lends it, lends it again (as an agent that retries a write does), then answers."""

    def fingerprint(self) -> str:
        return "lends-twice"

    def act(self, turns):
        replies = []
        for turn in turns:
            results = [m for m in turn.messages if m.get("role") == "tool"]
            if len(results) == 0:
                replies.append(Reply(tool_calls=[{"function": {"name": "find_book", "arguments": {"title": "Dune"}}}]))
            elif len(results) < 3:
                replies.append(Reply(tool_calls=[{"function": {"name": "lend", "arguments": {"book_id": "b1"}}}]))
            else:
                replies.append(Reply(text="Lent; it is due on 2026-12-24."))
        return replies


class Ledger:
    """A client of a store that keeps the loans: nothing of it shows in a snapshot."""

    def __init__(self) -> None:
        self._loans: list[str] = []

    def lent(self, book_id: str) -> int:
        return self._loans.count(book_id)


@sandbox.tool
def find_copy(ledger: Ledger, title: str) -> dict:
    """Find a book by its title.

    Args:
        title: the book's title, e.g. Dune
    """
    return {"id": TITLES[title], "title": title, "shelf": "A3"}


@sandbox.tool(name="lend")
def lend_copy(ledger: Ledger, book_id: str) -> dict:
    """Lend one copy of a book; each call lends one more.

    Args:
        book_id: a book id from find_copy
    """
    ledger._loans.append(book_id)
    return {"book_id": book_id, "due": "2026-12-24", "copies_out": ledger.lent(book_id)}


def _lends(episode: sandbox.Episode) -> int:
    return sum(c.name == "lend" for c in episode.calls)


def test_a_write_the_end_state_depends_on_is_a_write(library) -> None:
    roles = {t.name: (t.role, t.role_known) for t in library.tools}
    assert roles == {"find_book": ("lookup", True), "lend": ("write", True)}


def test_a_write_done_twice_is_a_repeated_write_whatever_the_answer_and_end_state_say(library) -> None:
    [task] = library.tasks()
    episode = Case(task).run(LendsTwice())
    assert _lends(episode) == 2
    assert episode.outcome == "repeated_write", episode.explain()
    assert not episode.success
    assert "lend x2 (gold plan: 1)" in episode.explain()


@pytest.mark.parametrize("severity", [1, 2, 3])
def test_the_oracle_never_repeats_a_write_under_missing_values(library, severity: int) -> None:
    [task] = library.tasks()
    spec = create("missing_values", severity=severity)
    assert spec.applies_to(task), "the look-up's answer loses fields"
    episode = Case(task, (spec,)).run(OracleAgent())
    assert (episode.outcome, _lends(episode)) == ("success", 1), episode.explain()


def test_a_check_does_not_hide_a_repeated_write() -> None:
    writes = sandbox.tool(_lend, name="lend", role="write")
    domain = _library("checked-library", writes, check=lambda episode, library: "success")
    [task] = domain.tasks()
    assert Case(task).run(LendsTwice()).outcome == "repeated_write"


def test_an_idempotent_write_may_be_repeated() -> None:
    domain = _library("idempotent-library", sandbox.tool(_lend, name="lend", role="write", idempotent=True))
    [task] = domain.tasks()
    assert Case(task).run(LendsTwice()).outcome == "success"


def test_a_tool_whose_role_nobody_knows_is_spared_by_missing_values_and_lent_once() -> None:
    """No end state, no declared role, and a state whose snapshot shows nothing: ``lend``'s role is unknown."""

    domain = sandbox.define_domain(
        "opaque-library", tools=[find_copy, lend_copy], state=lambda seed: Ledger(),
        tasks=[UserTask(QUERY, id="lend", plan=[Call(id="f", tool="find_copy", args={"title": "Dune"}), LEND],
                        sources={"due": "l.due"})],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    assert {t.name: t.role_known for t in domain.tools} == {"find_copy": False, "lend": False}
    [task] = domain.tasks()
    spec = create("missing_values", severity=3)
    assert not spec.applies_to(task), "every answer on the gold path may be a write's: none is blanked"
    episode = Case(task, (spec,)).run(OracleAgent())
    assert (episode.outcome, _lends(episode)) == ("success", 1), episode.explain()


def test_repeats_are_counted_per_write_tool_against_the_gold_plan() -> None:
    task = sandbox.Task(
        id="t", domain="d", family="f", split="test", seed=0, params={}, phrasing=0, query="q",
        plan=(Call(id="a", tool="lend", args={"book_id": "b1"}), Call(id="b", tool="lend", args={"book_id": "b2"})),
        answer={}, sources={},
    )  # fmt: skip
    lent = [Write("lend", {"book_id": b}, "") for b in ("b1", "b2")]
    assert repeated_writes(task, lent) == {}, "the gold plan lends twice"
    assert repeated_writes(task, [*lent, lent[0]]) == {"lend": 3}
    assert repeated_writes(task, [*lent, lent[0]], idempotent={"lend"}) == {}
    bare = task.model_copy(update={"plan": ()})
    assert repeated_writes(bare, lent[:1]) == {}, "one write is never a repeat, even where no plan is given"
    assert repeated_writes(bare, [Write("refund", {}, ""), Write("lend", {}, "")]) == {}


@sandbox.tool(role="write")
def renew(library: Library, book_id: str) -> None:
    """Renew the loan of a book; each call adds two weeks.

    Args:
        book_id: a book id from find_book
    """
    library._ledger.append(f"renew:{book_id}")


def test_the_oracle_does_not_send_again_a_write_whose_answer_tells_nothing() -> None:
    domain = sandbox.define_domain(
        "renewing-library", tools=[find_book, renew], state=lambda seed: Library(seed),
        tasks=[UserTask("Renew my loan of Dune; on which shelf does it go back?", id="renew",
                        plan=[FIND, Call(id="r", tool="renew", args={"book_id": "b1"}, after=("f",))],
                        sources={"shelf": "f.shelf"})],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    [task] = domain.tasks()
    episode = Case(task).run(OracleAgent())
    assert (episode.outcome, sum(c.name == "renew" for c in episode.calls)) == ("success", 1), episode.explain()


def test_reports_show_repeated_writes_in_a_column_of_their_own_and_gates_read_it(library) -> None:
    from sandbox.evaluation import Record, Report, check

    [task] = library.tasks()
    case = Case(task, (create("missing_values", severity=3),))
    record = Record.of("t", "lends-twice", case, case.run(LendsTwice()), Case(task).run(LendsTwice()))
    report = Report([record])
    assert report.row("all").repeated_writes.k == 1 and report.row("clean").repeated_writes.k == 1
    assert "repeated writes" in report.table().splitlines()[0]
    assert report.to_dict()["rows"][-1]["repeated_write"]["k"] == 1
    [verdict] = check(report, "all.repeated_writes<=0.1").checks
    assert verdict.verdict == "FAIL"
