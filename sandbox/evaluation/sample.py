"""What a fixed sample is drawn from, as one value: ``evaluate``, ``draw_cases`` and the worst-case search take a
:class:`Sample` instead of its settings one by one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from sandbox.perturbations.base import Pool, Tier

if TYPE_CHECKING:
    from sandbox.domain import Domain

TierSpec = Tier | int | str | Iterable[Tier | int | str]
"""A tier (``"perception"``), its number, ``"all"``, or several."""
DomainSpec = Union[str, "Domain", Sequence[Union[str, "Domain"]]]
"""``"all"``, a domain's name (or ``module:attribute``), a :class:`~sandbox.domain.Domain`, or several."""


@dataclass(frozen=True)
class Sample:
    """``n`` cases per tier of ``tiers`` (or of the perturbations ``names``), drawn from ``seed`` alone on the
    ``split`` tasks of ``domain`` (of the task ``families`` named, all if ``None``): stacks of 1 to ``max_stack``
    perturbations with the ``pool``'s texts, and with ``drift`` as many again that start mid-episode.

    Settings are kept as given (checked where the sample is drawn); ``names`` and ``families`` as tuples."""

    tiers: TierSpec = "all"
    n: int = 50
    seed: int = 0
    domain: DomainSpec = "poi"
    split: str = "test"
    names: Iterable[str] | None = None
    max_stack: int = 1
    pool: Pool = "eval"
    families: Sequence[str] | None = None
    drift: bool = False

    def __post_init__(self) -> None:
        # once, from any iterable (a generator is read once): a sample is passed on and read more than once
        for name in ("names", "families"):
            given = getattr(self, name)
            if given is not None:
                object.__setattr__(self, name, tuple(given))
