"""What a domain tells the perturbations and the oracle about its own words: :class:`DomainVocabulary`, declared
as ``Domain.vocabulary``, and the two pools its words come in.

Every pooled word has a ``train`` pool (for PAFT data) and an ``eval`` pool that share nothing, so an agent
fine-tuned on perturbations never meets the surface forms it is evaluated on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Pools = Mapping[str, tuple[Any, ...]]


def pools(train: tuple, eval_: tuple) -> dict[str, tuple]:
    """The ``train`` and ``eval`` pools of one vocabulary."""
    return {"train": train, "eval": eval_}


@dataclass(frozen=True)
class DomainVocabulary:
    """What a domain tells the perturbations and the oracle about its own words; every field may stay empty.

    A domain declares it as ``Domain.vocabulary`` (POI and medical in their own folders). Where a field is
    empty, or the domain declares none, the perturbations' generic rules stand in
    (``sandbox/perturbations/vocab.py``): synonyms by ``WORD_SYNONYMS``, rewrites by ``DESCRIPTION_FRAMES``,
    tools found by how close a description is to the clean one, dependencies from the gold plan.
    """

    tool_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    description_rewrites: Mapping[str, Pools] = field(default_factory=dict)
    capabilities: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Tool → the words its descriptions keep (the oracle finds tools by them)."""
    param_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    field_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    consumers: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Tool → (the lookup by name that gives its id, the id parameter)."""
    finder: str | None = None
    """The lookup by name and city, whose not-found makes an entity nonexistent."""
    entity: str = ""
    """What the finder finds, in words ("place")."""
    unit_tools: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    """Searches ranked by ``rank_by``: ``behaviour_change`` pages them A to Z."""
    rank_by: str | None = None
    entities: Callable[[Any], Iterable[Any]] | None = None
    """The finder's entities in a world (rows with ``name``, ``city``, ``id``): what an underspecified query
    and a nonexistent entity need to know who bears a name."""
    resolve: Callable[[Any, str, str], Any] | None = None
    """The entity of a world with a name in a city, or ``None`` (what the finder does, without a call)."""
    compound: tuple[str, str] | None = None
    """The two arguments ``argument_restructuring`` joins at severity 2 (as the perturbations' ``SLOT_PARAMS``)."""
    transfer: str | None = None
    """The held-out domain ``domain_transfer`` swaps this one's tasks for."""
    same_fields: Mapping[str, str] = field(default_factory=dict)
    """A field of a tool's answer → the field of an earlier lookup's record that holds the same fact under another
    name (``{"book_title": "title"}``): a second source ``deceptive_record`` and the oracle compare, beyond the
    fields both name alike (sandbox.perturbations.witness)."""

    def pooled(self) -> dict[str, Mapping[str, Pools]]:
        """Its tables of pooled words, by field (what must keep the ``train`` and ``eval`` pools apart)."""
        return {"tool_synonyms": self.tool_synonyms, "description_rewrites": self.description_rewrites,
                "param_synonyms": self.param_synonyms, "field_synonyms": self.field_synonyms}  # fmt: skip


__all__ = ["DomainVocabulary", "Pools", "pools"]
