"""A bookshop as a tool world: three tools, a fresh state per episode, six tasks with gold plans."""

from dataclasses import dataclass, field

import sandbox
from sandbox import Call, ToolFailure, UserTask

BOOKS = {"b1": ("Dune", "Frank Herbert"), "b2": ("Emma", "Jane Austen"), "b3": ("Persuasion", "Jane Austen")}


@dataclass
class Shop:
    seed: int
    loans: list[str] = field(default_factory=list)


@sandbox.tool
def search_books(shop: Shop, author: str) -> dict:
    """Find the books of an author.

    Args:
        author: the author's full name, e.g. Jane Austen
    """
    found = [{"book_id": i, "title": t} for i, (t, a) in BOOKS.items() if a == author]
    if not found:
        raise ToolFailure("not_found", f"no book by {author!r}")
    return {"results": found}


@sandbox.tool
def get_book(shop: Shop, book_id: str) -> dict:
    """One book's title and author.

    Args:
        book_id: a book id from search_books, e.g. b1
    """
    if book_id not in BOOKS:
        raise ToolFailure("not_found", f"no book {book_id!r}")
    title, author = BOOKS[book_id]
    return {"book_id": book_id, "title": title, "author": author}


@sandbox.tool(role="write")
def borrow(shop: Shop, book_id: str) -> dict:
    """Borrow a book.

    Args:
        book_id: a book id from search_books, e.g. b1
    """
    get_book.fn(None, shop, get_book.args(book_id=book_id))
    shop.loans.append(book_id)
    return {"borrowed": book_id, "loans": len(shop.loans)}


SHOP = sandbox.define_domain(
    "bookshop",
    tools=[search_books, get_book, borrow],
    state=lambda seed: Shop(seed),
    tasks=[
        UserTask("Who wrote the book b1?", id="author", plan=[Call(id="g", tool="get_book", args={"book_id": "b1"})],
                 sources={"author": "g.author"}),
        UserTask("Name a book by Frank Herbert.", id="title", sources={"title": "s.results.0.title"},
                 plan=[Call(id="s", tool="search_books", args={"author": "Frank Herbert"})]),
        UserTask("Who wrote the first book Jane Austen has here?", id="chain", sources={"author": "g.author"},
                 plan=[Call(id="s", tool="search_books", args={"author": "Jane Austen"}),
                       Call(id="g", tool="get_book", args={"book_id": "b2"}, after=("s",))]),
        UserTask("How many books by Jane Austen do you have?", id="count", sources={"count": "s.results|count"},
                 plan=[Call(id="s", tool="search_books", args={"author": "Jane Austen"})]),
        UserTask("Borrow the book b3 for me.", id="borrow", plan=[Call(id="b", tool="borrow", args={"book_id": "b3"})]),
        UserTask("Renew my loan of Dune for a month.", id="renew", unsolvable="missing_capability"),
    ],
)  # fmt: skip
