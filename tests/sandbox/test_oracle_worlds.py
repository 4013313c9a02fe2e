"""The oracle on small worlds a user writes: it holds by its mechanisms, on tools nobody here named.

Each world is a few tools and tasks through the public API (``@sandbox.tool``, ``sandbox.define_domain``), built
to meet one failure class: a parameter whose description names another tool, read under renames and traps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

import sandbox
from sandbox import Call, Computed, OracleAgent, ToolFailure, UserTask
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.perturbations import POOLS, get, names

ORACLE = OracleAgent()
WORLDS = ("oracle-notes", "oracle-rooms", "oracle-mail", "oracle-awards", "oracle-inbox", "oracle-desk", "oracle-trips")


@pytest.fixture(scope="module", autouse=True)
def _unregistered():
    """The worlds are registered (a case reaches its domain by name) while this module runs, and only then: a test
    of every registered domain must not meet them."""
    yield
    for name in WORLDS:
        DOMAINS.pop(name, None)


NOTES = {"n1": ("groceries", "milk, eggs"), "n2": ("work", "send the report"), "n3": ("work", "book the room")}


@dataclass
class Notebook:
    seed: int
    archived: list[str] = field(default_factory=list)


@sandbox.tool
def search_notes(book: Notebook, topic: str) -> dict:
    """Find the notes on a topic.

    Args:
        topic: the topic, e.g. work
    """
    found = [{"note_id": i, "topic": t} for i, (t, _) in NOTES.items() if t == topic]
    if not found:
        raise ToolFailure("not_found", f"no note on {topic!r}")
    return {"results": found}


@sandbox.tool
def read_note(book: Notebook, note_id: str) -> dict:
    """The text of one note.

    Args:
        note_id: a note id from search_notes, e.g. n1
    """
    if note_id not in NOTES:
        raise ToolFailure("not_found", f"no note {note_id!r}")
    return {"note_id": note_id, "text": NOTES[note_id][1]}


@sandbox.tool(role="write")
def archive(book: Notebook, note_id: str) -> dict:
    """Archive a note.

    Args:
        note_id: a note id from search_notes, e.g. n1
    """
    if note_id not in NOTES:
        raise ToolFailure("not_found", f"no note {note_id!r}")
    book.archived.append(note_id)
    return {"archived": note_id}


def _notes() -> sandbox.Domain:
    """Every parameter but one documents itself by naming ``search_notes``: a renamed, swapped or erased
    ``search_notes`` changes the description the oracle matches a parameter by."""
    domain = sandbox.define_domain(
        "oracle-notes", tools=[search_notes, read_note, archive], state=lambda seed: Notebook(seed),
        tasks=[
            UserTask("What does note n1 say?", id="read", plan=[Call(id="r", tool="read_note", args={"note_id": "n1"})],
                     sources={"text": "r.text"}),
            UserTask("What does my first work note say?", id="chain", sources={"text": "r.text"},
                     plan=[Call(id="s", tool="search_notes", args={"topic": "work"}),
                           Call(id="r", tool="read_note", args={"note_id": "n2"}, after=("s",))]),
            UserTask("Archive the note n3.", id="archive", plan=[Call(id="a", tool="archive", args={"note_id": "n3"})]),
        ],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    return domain


def _wrong(domain: sandbox.Domain, names: tuple[str, ...], seeds: range = range(3)) -> list[str]:
    """The oracle's episodes on every applied case of ``names`` (each severity, pool and seed) that neither solve a
    solvable case nor refuse an unsolvable one, explained."""
    cases = []
    for name in names:
        cls = get(name)
        for severity in cls.severities():
            specs = [cls(severity=severity, pool=pool, seed=seed) for pool in POOLS for seed in seeds]
            cases += [Case(t, (spec,)) for spec in specs for t in domain.tasks() if spec.applies_to(t)]
    assert cases, f"none of {names} applies to {domain.name}"
    episodes = run_cases(ORACLE, cases)
    return [e.explain() for c, e in zip(cases, episodes, strict=True)
            if e.outcome != ("success" if c.solvable else "refused")]  # fmt: skip


RENAMES = ("tool_name_noise", "semantic_renaming", "identity_erasure", "semantic_trap", "distractor_tools")


@pytest.mark.parametrize("name", RENAMES)
def test_a_parameter_that_names_a_renamed_tool_is_still_filled(name: str) -> None:
    wrong = _wrong(_notes(), (name,))
    assert not wrong, "\n\n".join(wrong[:2])


ROOMS = {"A": 2, "B": 5}
FORECASTS = {"Oslo": "snow"}


@dataclass
class Building:
    seed: int
    bookings: list[str] = field(default_factory=list)


@sandbox.tool
def find_room(building: Building, name: str) -> dict | None:
    """Find a room by its name; nothing when there is none.

    Args:
        name: the room's name, e.g. A
    """
    return {"room": name, "floor": ROOMS[name]} if name in ROOMS else None


@sandbox.tool
def check_conflicts(building: Building, room: str) -> None:
    """Check that a room is free; answers nothing when it is.

    Args:
        room: the room's name, e.g. A
    """
    if room in building.bookings:
        raise ToolFailure("runtime_error", f"Error executing tool check_conflicts: room {room} is taken")


@sandbox.tool(role="write")
def book_room(building: Building, room: str) -> None:
    """Book a room; answers nothing.

    Args:
        room: the room's name, e.g. A
    """
    building.bookings.append(room)


@sandbox.tool
def get_forecast(building: Building, city: str) -> dict:
    """Tomorrow's weather in a city.

    Args:
        city: the city, e.g. Oslo
    """
    return {"city": city, "sky": FORECASTS[city]}  # an unknown city raises, as a server's tool would


@sandbox.tool
def heating_status(building: Building) -> dict:
    """Whether the heating is on."""
    raise ToolFailure("runtime_error", "503 Service Unavailable: the thermostat is busy, try again later")


def _forecast(building: Building, city: str) -> dict:
    try:
        return get_forecast.fn(None, building, get_forecast.args(city=city))
    except KeyError as exc:  # what an MCP server's SDK says of any exception in a tool
        raise ToolFailure("runtime_error", f"Error executing tool get_forecast: {exc!r}") from None


forecast = sandbox.tool(_forecast, name="forecast")


def _rooms() -> sandbox.Domain:
    domain = sandbox.define_domain(
        "oracle-rooms", tools=[find_room, check_conflicts, book_room, forecast, heating_status],
        state=lambda seed: Building(seed),
        tasks=[
            UserTask("Book room A if it is free.", id="book",
                     plan=[Call(id="c", tool="check_conflicts", args={"room": "A"}),
                           Call(id="b", tool="book_room", args={"room": "A"}, after=("c",))]),
            UserTask("Which floor is room Z on?", id="ghost", unsolvable="nonexistent_entity",
                     plan=[Call(id="f", tool="find_room", args={"name": "Z"})]),
            UserTask("Will it snow in Atlantis tomorrow?", id="atlantis", unsolvable="nonexistent_entity",
                     plan=[Call(id="f", tool="forecast", args={"city": "Atlantis"})]),
            UserTask("Is the heating on?", id="heating", unsolvable="fatal_error",
                     plan=[Call(id="h", tool="heating_status", args={})]),
        ],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    return domain


def _task(domain: sandbox.Domain, task_id: str) -> sandbox.Task:
    return next(t for t in domain.tasks() if t.id.endswith(task_id))


def test_a_lookup_that_answers_nothing_is_not_asked_again() -> None:
    episode = Case(_task(_rooms(), "book")).run(ORACLE)
    assert episode.outcome == "success", episode.explain()
    assert [c.name for c in episode.calls] == ["check_conflicts", "book_room"]


def test_a_lookup_that_finds_nothing_on_an_unsolvable_task_ends_in_a_refusal() -> None:
    episode = Case(_task(_rooms(), "ghost")).run(ORACLE)
    assert episode.outcome == "refused", episode.explain()
    assert len(episode.calls) == 1


def test_a_generic_server_error_is_permanent_and_refused_at_once() -> None:
    episode = Case(_task(_rooms(), "atlantis")).run(ORACLE)
    assert episode.outcome == "refused", episode.explain()
    assert len(episode.calls) == 1


def test_a_transient_error_is_retried_a_bounded_number_of_times_then_refused() -> None:
    from sandbox.agents.oracle.planner import MAX_RETRIES

    episode = Case(_task(_rooms(), "heating")).run(ORACLE)
    assert episode.outcome == "refused", episode.explain()
    assert len(episode.calls) == MAX_RETRIES + 1 and len(episode.steps) <= Case(episode.task).max_steps


@pytest.mark.parametrize(
    ("kind", "message", "again"),
    [
        ("runtime_error", "Service temporarily unavailable, try again.", True),
        ("runtime_error", "Upstream timeout; please retry.", True),
        ("runtime_error", "HTTP 429: slow down", True),
        ("runtime_error", "Error executing tool get_user: 503 Service Unavailable", True),
        ("runtime_error", "Error executing tool get_user: KeyError('u9')", False),
        ("runtime_error", "403 Forbidden", False),
        ("runtime_error", "invalid account number", False),
        ("runtime_error", "Access revoked for good; no retry can succeed.", False),
        ("rate_limited", "Rate limit reached: retry after 2 s.", True),
        ("not_found", "no user 'u9'", False),
        ("fatal", "This service has been permanently discontinued.", False),
    ],
)
def test_an_error_is_transient_only_where_its_words_say_so(kind: str, message: str, again: bool) -> None:
    from sandbox.agents.oracle.planner import transient

    assert transient(kind, message) is again


@sandbox.tool
def read_mail(building: Building, mail_id: str) -> dict:
    """One mail's sender, subject and body.

    Args:
        mail_id: the mail's id, e.g. m1
    """
    return {"sender": "ann@example.com", "body": "Hi,\nsee you at 8.\nAnn", "room": "007", "urgent": "true"}


def test_format_shift_keeps_every_answer_readable_at_every_severity() -> None:
    """A body of several lines and texts that read as numbers or booleans survive 'path = value' lines."""
    domain = sandbox.define_domain(
        "oracle-mail", tools=[read_mail], state=lambda seed: Building(seed),
        tasks=[UserTask(f"What is the {key} of mail m1?", id=key, sources={key: f"r.{key}"},
                        plan=[Call(id="r", tool="read_mail", args={"mail_id": "m1"})])
               for key in ("body", "room", "urgent")],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    wrong = _wrong(domain, ("format_shift",))
    assert not wrong, "\n\n".join(wrong[:2])


SCORES = [("ann", 3), ("bob", 7), ("cy", 5)]


@sandbox.tool
def list_players(building: Building, team: str) -> dict:
    """The players of a team with their scores.

    Args:
        team: the team's name, e.g. red
    """
    return {"players": [{"name": n, "score": s} for n, s in SCORES]}


@sandbox.tool
def today(building: Building) -> dict:
    """Today's date."""
    return {"date": "2026-12-03"}


@sandbox.tool(role="write")
def give_award(building: Building, player: str, date: str = "") -> dict:
    """Give the award to a player.

    Args:
        player: the player's name
        date: the day of the award, as YYYY-MM-DD
    """
    return {"awarded": player, "on": date}


def _awards() -> sandbox.Domain:
    first = Call(id="a", tool="give_award", args={"player": "ann"}, after=("l",))
    dated = Call(id="a", tool="give_award", args={"player": "ann", "date": "2026-12-03"}, after=("t",))
    domain = sandbox.define_domain(
        "oracle-awards", tools=[list_players, today, give_award], state=lambda seed: Building(seed),
        tasks=[
            UserTask("Give the award to the best player of team red.", id="best",
                     plan=[Call(id="l", tool="list_players", args={"team": "red"}),
                           Call(id="a", tool="give_award", args={"player": "bob"}, after=("l",))]),
            UserTask("Give the award to the first player listed in team red.", id="first",
                     plan=[Call(id="l", tool="list_players", args={"team": "red"}), first]),
            UserTask("Give ann today's award.", id="today",
                     plan=[Call(id="t", tool="today", args={}), dated]),
        ],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    return domain


@pytest.mark.parametrize(
    ("task_id", "merge", "invert"),
    [
        ("best", False, False),  # the best player: picked by what the rows hold, not by place
        ("first", True, True),  # the first row: a new tool given the lookup's arguments picks it as the user does
        ("today", False, True),  # a lookup that takes no arguments: nothing to merge it by
    ],
)
def test_dependencies_are_changed_only_where_a_new_tool_carries_them(task_id: str, merge: bool, invert: bool) -> None:
    task = _task(_awards(), task_id)
    assert get("dependency_merge")(severity=1).applies_to(task) is merge
    assert get("logic_inversion")(severity=1).applies_to(task) is invert


def test_the_oracle_follows_every_dependency_change_that_applies() -> None:
    wrong = _wrong(_awards(), ("dependency_merge", "logic_inversion", "dependency_split"))
    assert not wrong, "\n\n".join(wrong[:2])


@sandbox.tool
def search_contacts(building: Building, query: str) -> list:
    """Finds contacts by name.

    Args:
        query: the name to look for
    """
    return [{"name": "Lily White", "email": "lily.white@example.com"}]


@sandbox.tool
def search_emails(building: Building, query: str, sender: str | None = None) -> list:
    """Searches the emails that match a query.

    Args:
        query: the words to look for
        sender: the sender's email address; if null, all emails. Use `search_contacts` when it is unknown.
    """
    return [{"id": "7", "subject": "birthday party", "sender": sender or "anyone@example.com"}]


def test_an_optional_parameter_that_names_a_tool_is_filled_under_every_perturbation() -> None:
    """``sender`` is optional (``anyOf [string, null]``), documented by naming another tool, and takes what that
    tool returned; the look-up and the search both take a ``query``, so no merged tool could take both."""
    domain = sandbox.define_domain(
        "oracle-inbox", tools=[search_contacts, search_emails], state=lambda seed: Building(seed),
        tasks=[UserTask("What is the id of Lily's email about the party?", id="find", sources={"id": "e.0.id"},
                        plan=[Call(id="c", tool="search_contacts", args={"query": "Lily"}),
                              Call(id="e", tool="search_emails", after=("c",),
                                   args={"query": "party", "sender": "lily.white@example.com"})])],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    [task] = domain.tasks()
    assert not get("dependency_merge")(severity=1).applies_to(task)
    wrong = _wrong(domain, tuple(names()), seeds=range(2))
    assert not wrong, "\n\n".join(wrong[:2])


TICKETS = {"t1": "open", "t2": "held", "t3": "closed", "t4": "held"}


@sandbox.tool
def list_tickets(building: Building, state: Literal["open", "held", "closed"]) -> dict:
    """list_tickets: the tickets in one state.

    Args:
        state: the tickets' state
    """
    return {"tickets": [t for t, s in TICKETS.items() if s == state]}


def test_a_split_tool_whose_description_names_it_is_split_not_moved() -> None:
    """A generated server's description starts with its tool's name (faultbench's ``list_orders: list on
    order``), so each part of a split names the tool it was split from, with the same arguments: it is a sibling
    the oracle calls for its values, not a successor every call goes to."""
    domain = sandbox.define_domain(
        "oracle-desk", tools=[list_tickets], state=lambda seed: Building(seed),
        tasks=[UserTask(f"Which tickets are {state}?", id=state, sources={"tickets": "l.tickets"},
                        plan=[Call(id="l", tool="list_tickets", args={"state": state})])
               for state in ("open", "held", "closed")],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    wrong = _wrong(domain, ("tool_split",))
    assert not wrong, "\n\n".join(wrong[:2])


NIGHTLY = {"h1": 120, "h2": 95, "h3": 150, "h4": 80}
HOTELS = {"Paris": ("h1", "h2", "h3"), "Rome": ("h4",)}
RATINGS = {"h1": 4.8, "h2": 4.1, "h3": 3.9, "h4": 4.5}


@sandbox.tool
def find_hotels(building: Building, city: str) -> dict:
    """The hotels of a city with their nightly price in US dollars.

    Args:
        city: the city, e.g. Paris
    """
    if city not in HOTELS:
        raise ToolFailure("not_found", f"no hotels in {city!r}")
    return {"city": city, "hotels": [{"hotel_id": h, "nightly": NIGHTLY[h]} for h in HOTELS[city]]}


@sandbox.tool
def get_rating(building: Building, hotel_id: str) -> dict:
    """A hotel's guest rating out of 5.

    Args:
        hotel_id: the hotel's id, from find_hotels
    """
    if hotel_id not in RATINGS:
        raise ToolFailure("not_found", f"no hotel {hotel_id!r}")
    return {"hotel_id": hotel_id, "rating": RATINGS[hotel_id]}


@sandbox.tool
def quote_stay(building: Building, hotel_id: str, nights: int) -> dict:
    """What a stay at a hotel costs, in US dollars.

    Args:
        hotel_id: the hotel's id, from find_hotels
        nights: how many nights
    """
    if hotel_id not in NIGHTLY:
        raise ToolFailure("not_found", f"no hotel {hotel_id!r}")
    return {"hotel_id": hotel_id, "nights": nights, "total_usd": NIGHTLY[hotel_id] * nights}


@sandbox.tool
def usd_rate(building: Building, currency: str) -> dict:
    """How much of a currency one US dollar buys.

    Args:
        currency: the currency's code, e.g. EUR
    """
    return {"currency": currency, "rate": {"EUR": 0.9}[currency]}


def in_euros(results: dict) -> float:
    return round(results["q"]["total_usd"] * results["r"]["rate"], 2)


def gap(results: dict) -> int:
    return results["q1"]["total_usd"] - results["q2"]["total_usd"]


def _stay(call_id: str, hotel: str, nights: int, after: tuple[str, ...]) -> Call:
    return Call(id=call_id, tool="quote_stay", args={"hotel_id": hotel, "nights": nights}, after=after)


def _trips() -> sandbox.Domain:
    """Answers computed from what a stay's quote returned (a conversion, a difference), on plans that carry a hotel
    id from ``find_hotels`` into ``quote_stay`` or ``get_rating``."""
    paris, rome = (Call(id=i, tool="find_hotels", args={"city": c}) for i, c in (("f", "Paris"), ("g", "Rome")))
    rate = Call(id="r", tool="usd_rate", args={"currency": "EUR"})
    rated = [Call(id=f"s{n}", tool="get_rating", args={"hotel_id": f"h{n}"}, after=("f",)) for n in (1, 2, 3)]
    domain = sandbox.define_domain(
        "oracle-trips", tools=[find_hotels, get_rating, quote_stay, usd_rate], state=lambda seed: Building(seed),
        tasks=[
            UserTask("What do 3 nights at the first hotel listed in Paris cost, in euros?", id="first",
                     plan=[paris, _stay("q", "h1", 3, ("f",)), rate], sources={"total": Computed(in_euros)}),
            UserTask("How much more do 2 nights cost at the first hotel listed in Paris than at the second?",
                     id="two-rows", plan=[paris, _stay("q1", "h1", 2, ("f",)), _stay("q2", "h2", 2, ("f",))],
                     sources={"gap": Computed(gap, calls=("q1", "q2"))}),
            UserTask("How much more do 2 nights cost at the first hotel listed in Paris than at hotel h3?",
                     id="own-id", plan=[paris, _stay("q1", "h1", 2, ("f",)), _stay("q2", "h3", 2, ())],
                     sources={"gap": Computed(gap, calls=("q1", "q2"))}),
            UserTask("How much more do 2 nights cost at the first hotel listed in Paris than at the first in Rome?",
                     id="two-lookups", plan=[paris, _stay("q1", "h1", 2, ("f",)), rome, _stay("q2", "h4", 2, ("g",))],
                     sources={"gap": Computed(gap, calls=("q1", "q2"))}),
            UserTask("How much more do 3 nights cost than 2 at the first hotel listed in Paris?", id="same-row",
                     plan=[paris, _stay("q1", "h1", 3, ("f",)), _stay("q2", "h1", 2, ("f",))],
                     sources={"gap": Computed(gap, calls=("q1", "q2"))}),
            UserTask("What do 3 nights at the best-rated hotel in Paris cost, in euros?", id="best",
                     plan=[paris, *rated, _stay("q", "h1", 3, ("f", "s1", "s2", "s3")), rate],
                     sources={"total": Computed(in_euros, calls=("q", "r"))}),
        ],
    )  # fmt: skip
    sandbox.register_domain(domain, replace=True)
    return domain


@pytest.mark.parametrize(
    ("task_id", "changed"),
    [
        ("first", True),  # the first row into the one quote
        ("two-rows", False),  # the second quote takes the second row: a tool that reads the first cannot make it
        ("own-id", False),  # the second quote takes the user's own id: a tool that takes no id cannot make it
        ("two-lookups", True),  # each quote takes the first row of its own lookup: the new tool makes both
        ("same-row", True),  # both take the first row
        ("best", True),  # the quote's id is the first row (chosen by ratings, and the new tool picks it too)
    ],
)
def test_a_dependency_changes_only_where_every_call_of_its_tool_carries_the_value(task_id: str, changed: bool) -> None:
    """A computed answer (a difference of two quotes) may need the same tool called with a value the lookup's first
    row does not hold; a merged or inverted tool, which reads that row, can make only the calls that take it."""
    task = _task(_trips(), task_id)
    for name in ("dependency_merge", "logic_inversion"):
        assert get(name)(severity=1).applies_to(task) is changed, name


def test_ratings_of_every_row_keep_their_own_tool_where_a_quote_of_the_first_is_merged() -> None:
    """``best`` compares the ratings of all three hotels: ``get_rating`` is called for rows 1-3, so only the quote,
    whose id is the first row, is merged; the ratings stay askable."""
    task = _task(_trips(), "best")
    spec = get("dependency_merge")(severity=1)
    tools = {t["function"]["name"] for t in Case(task, (spec,)).env().tool_specs()}
    assert "get_rating" in tools and "quote_stay" not in tools, tools


def test_the_oracle_solves_every_dependency_change_on_computed_answers() -> None:
    wrong = _wrong(_trips(), ("dependency_merge", "logic_inversion"))
    assert not wrong, "\n\n".join(wrong[:2])
