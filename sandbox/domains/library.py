"""A small lending-library domain, built through the internals, that no perturbation has vocabulary for.

It is the proof that the catalogue is generic: its tools, ids, field names and wording share nothing with
POI or medical (ids are ``bk-0042``, results carry ``title`` and ``author``), so whatever works on it works
through the generic rules, the gold plan and the specs alone. Three tools (a search, a look-up by id, a
write), five task families (one unsolvable). It is not a built-in domain: :func:`registered` makes it
reachable by name for as long as a test or the catalogue needs it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import Field

from sandbox.domain import DEFAULT_SIZES, Domain
from sandbox.family import Draft, family
from sandbox.state import State, Write, verification_code
from sandbox.task import Call, Source
from sandbox.tools import Args, Tool, ToolFailure

NAME = "library"
GENRES = ("mystery", "poetry", "history", "science", "travel")
_WORDS = ("Silent", "Amber", "Northern", "Glass", "Hidden", "Winter", "Copper", "Quiet", "Lost", "Paper",
          "River", "Iron", "Velvet", "Hollow", "Bright", "Salt")  # fmt: skip
_NOUNS = ("Harbour", "Orchard", "Lantern", "Atlas", "Garden", "Mirror", "Tide", "Archive", "Meadow", "Compass")
_AUTHORS = ("Ada Quill", "Bram Ostler", "Cleo Vance", "Dario Penn", "Edda Moor", "Femi Lark", "Gus Thorn")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


@dataclass(frozen=True)
class Book:
    id: str
    title: str
    author: str
    genre: str
    year: int
    shelf: str
    width_cm: float


@dataclass(frozen=True)
class Library:
    seed: int
    books: dict[str, Book]

    def search(self, text: str, genre: str) -> list[Book]:
        needle = text.casefold()
        hits = [b for b in self.books.values()
                if needle in f"{b.title} {b.author}".casefold() and b.genre == genre.casefold()]  # fmt: skip
        return sorted(hits, key=lambda b: (-b.year, b.id))


def build_world(seed: int) -> Library:
    r = random.Random(seed)
    titles = [f"The {w} {n}" for w in _WORDS for n in _NOUNS]
    r.shuffle(titles)
    books = {}
    for i, title in enumerate(titles[:60]):
        book_id = f"bk-{i + 1:04d}"
        books[book_id] = Book(book_id, title, r.choice(_AUTHORS), r.choice(GENRES), r.randrange(1950, 2024),
                              f"{r.choice('ABCDEFG')}{r.randrange(1, 20)}", r.randrange(120, 300) / 10)  # fmt: skip
    return Library(seed, books)


class SearchArgs(Args):
    text: str = Field(description="words of a title or an author")
    genre: str = Field(description="the section to look in, one of " + ", ".join(GENRES))


def search_books(world: Library, state: State, a: SearchArgs) -> dict:
    found = world.search(a.text, a.genre)
    if not found:
        raise ToolFailure("not_found", f"the {a.genre} section has nothing matching {a.text!r}")
    return {"matches": [{"book": b.id, "title": b.title, "year": b.year} for b in found[:4]]}


class BookArgs(Args):
    book: str = Field(description="catalogue number, like bk-0007")


def _book(world: Library, book: str) -> Book:
    found = world.books.get(book)
    if found is None:
        raise ToolFailure("not_found", f"no book numbered {book!r}")
    return found


def get_book(world: Library, state: State, a: BookArgs) -> dict:
    b = _book(world, a.book)
    return {"book": b.id, "title": b.title, "author": b.author, "genre": b.genre, "year": b.year, "shelf": b.shelf,
            "width_cm": b.width_cm}  # fmt: skip


class ReserveArgs(Args):
    book: str = Field(description="catalogue number, like bk-0007")
    pickup: str = Field(description="weekday to collect it")


def reserve_book(world: Library, state: State, a: ReserveArgs) -> dict:
    _book(world, a.book)
    args = a.model_dump()
    code = verification_code("LN", world.seed, "reserve", *args.values())
    loan = state.next_id("L")
    state.records[loan] = {"loan": loan, **args, "code": code}
    state.writes.append(Write("reserve_book", args, code))
    return {"loan": loan, "code": code}


TOOLS = (
    Tool("search_books", "Search one section of the catalogue by title or author; newest first, with "
         "catalogue numbers.",
         SearchArgs, search_books),
    Tool("get_book", "Everything the catalogue records about one book: author, genre, year and shelf.",
         BookArgs, get_book),
    Tool("reserve_book", "Put a book on hold for collection; gives a loan number and a confirmation code.",
         ReserveArgs, reserve_book, writes=True),
)  # fmt: skip


def _pick(world: Library, r: random.Random, split: str) -> Book:
    # Splits keep to their own books: the first 30 train, the next 15 dev, the last 15 test.
    books = list(world.books.values())
    pool = {"train": books[:30], "dev": books[30:45], "test": books[45:]}[split]
    while True:
        b = r.choice(pool)
        if world.search(b.title, b.genre) == [b]:
            return b


def _search(b: Book) -> Call:
    return Call(id="search", tool="search_books", args={"text": b.title, "genre": b.genre})


def author(world, r, split):
    b = _pick(world, r, split)
    return Draft(
        params={"title": b.title, "genre": b.genre},
        plan=[_search(b), Call(id="book", tool="get_book", args={"book": b.id}, after=("search",))],
        answer={"author": b.author},
        sources={"author": Source(call="book", path="author")},
    )


def shelf(world, r, split):
    b = _pick(world, r, split)
    return Draft(
        params={"book": b.id},
        plan=[Call(id="book", tool="get_book", args={"book": b.id})],
        answer={"shelf": b.shelf, "width_cm": str(b.width_cm)},
        sources={"shelf": Source(call="book", path="shelf"), "width_cm": Source(call="book", path="width_cm")},
    )


def year(world, r, split):
    b = _pick(world, r, split)
    return Draft(
        params={"title": b.title, "genre": b.genre},
        plan=[_search(b)],
        answer={"year": str(b.year)},
        sources={"year": Source(call="search", path="matches.0.year")},
    )


def reserve(world, r, split):
    b, day = _pick(world, r, split), r.choice(DAYS)
    write = Call(id="reserve", tool="reserve_book", args={"book": b.id, "pickup": day}, after=("search",))
    return Draft(params={"title": b.title, "genre": b.genre, "day": day}, plan=[_search(b), write], write=write,
                 sources={"code": Source(call="reserve", path="code")})  # fmt: skip


def unknown(world, r, split):
    b = _pick(world, r, split)
    ghost = b.title.replace("The ", "The Unwritten ", 1)
    search = Call(id="search", tool="search_books", args={"text": ghost, "genre": b.genre})
    return Draft(params={"title": ghost, "genre": b.genre}, plan=[search])


FAMILIES = (
    family("author", author, [
        "Who wrote {title} ({genre})?", "Which author wrote {title}, in {genre}?",
        "Tell me the author of {title} ({genre}).",
    ], ["Whose book is {title} ({genre})?"], ["I'd like to know who penned {title}, from {genre}."]),
    family("shelf", shelf, [
        "On which shelf is book {book}, and how wide is it in cm?", "Where is {book} shelved, and how wide is it?",
        "Which shelf holds {book}? Also give its width.",
    ], ["Where do I find {book} in the stacks, and how much room does it take?"],
        ["Point me to the shelf of {book} and tell me its width."]),
    family("year", year, [
        "When was {title} ({genre}) published?", "What year did {title}, in {genre}, come out?",
        "Publication year of {title} ({genre})?",
    ], ["In which year did {title} ({genre}) appear?"], ["How old is {title} ({genre}): what year is it from?"]),
    family("reserve", reserve, [
        "Reserve {title} ({genre}) for pickup on {day}.", "Put {title} ({genre}) on hold; I'll collect it {day}.",
        "Hold {title}, in {genre}, for me to pick up on {day}.",
    ], ["Keep {title} ({genre}) aside for me until {day}."],
        ["Could you set {title} ({genre}) aside? I come by on {day}."]),
    family("unknown", unknown, [
        "Who wrote {title} ({genre})?", "Which author wrote {title}, in {genre}?",
        "Tell me the author of {title} ({genre}).",
    ], ["Whose book is {title} ({genre})?"], ["I'd like to know who penned {title}, from {genre}."],
        unsolvable="nonexistent_entity"),
)  # fmt: skip

TEST_TASKS = 150
"""Every distinct task its test world holds: asking for more would draw 45,000 times to find none."""
DOMAIN = Domain(NAME, build_world, TOOLS, FAMILIES, sizes={**DEFAULT_SIZES, "test": TEST_TASKS})


@contextmanager
def registered() -> Iterator[Domain]:
    """The library reachable by name (``get_domain("library")``) inside the block, and gone after it
    (unless it was registered before)."""
    from sandbox.domains import DOMAINS

    added = DOMAINS.setdefault(NAME, DOMAIN) is DOMAIN and NAME not in _held
    _held.add(NAME) if added else None
    try:
        yield DOMAINS[NAME]
    finally:
        if added:
            _held.discard(NAME)
            DOMAINS.pop(NAME, None)


_held: set[str] = set()
