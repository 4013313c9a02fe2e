"""Task families: query phrasings plus a function that drafts a task from a world."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.errors import UsageError
from sandbox.task import Call, Source, Split, Unsolvable


@dataclass(frozen=True)
class Draft:
    """What a family draws for one task; the domain turns it into a :class:`~sandbox.task.Task`."""

    params: dict[str, str]
    plan: list[Call]
    answer: dict[str, str] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    write: Call | None = None


@dataclass(frozen=True)
class Family:
    """A kind of task.

    ``phrasings`` are the clean templates (the ones training sees). ``paraphrases`` maps a
    perturbation pool (``"train"``, ``"eval"``) to further templates that clean tasks never use:
    the query-shift perturbation draws from them, so PAFT and evaluation share no phrasing.
    """

    name: str
    phrasings: tuple[str, ...]
    paraphrases: Mapping[str, tuple[str, ...]]
    draft: Callable[[Any, random.Random, Split], Draft | None]
    unsolvable: Unsolvable | None = None

    def __post_init__(self) -> None:
        if len(self.phrasings) < 3 or any(len(v) < 1 for v in self.paraphrases.values()):
            raise UsageError(f"family {self.name!r} needs 3 clean phrasings and a paraphrase per pool")


def family(name: str, draft: Callable[[Any, random.Random, Split], Draft | None], phrasings: list[str],
           train: list[str], eval_: list[str], unsolvable: Unsolvable | None = None) -> Family:  # fmt: skip
    """A family from its clean phrasings and its ``train`` and ``eval`` paraphrases, as the domains write them."""
    return Family(name, tuple(phrasings), {"train": tuple(train), "eval": tuple(eval_)}, draft, unsolvable)
