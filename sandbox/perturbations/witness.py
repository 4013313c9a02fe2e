"""Witnesses: an earlier answer about the same entity, the world's second source for a record.

A plan that looks an entity up and then asks another tool about it (a search gives the row ``{"book_id": "b2",
"title": "Emma"}``, then ``get_book(book_id="b2")`` answers ``{"book_id": "b2", "title": "Emma", ...}``) holds two
answers about one entity: the object of the lookup's answer that holds the value the later call takes (its
*record*: a whole answer, or one row of a search's results), and the later call's answer. Where both carry a field
of the same name (``title``, ``rating``, ``birth_year``), they must agree; an answer that holds another value there
is another entity's record filed under the key asked for, whatever its echo of the request says. That is how an
agent notices a plausible but wrong record (``deceptive_record``), and how the oracle does. The rule reads names and
values only: the key is the value the later call was given, and the fields compared are those both answers name (or
a domain declares to hold the same fact, ``DomainVocabulary.same_fields``), less the key and the fields that echo
the later call's own request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.domain import Domain
from sandbox.gold_plan import dependencies
from sandbox.perturbations.echo import echo_pairs, same
from sandbox.task import Task


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _holds(field: Any, value: Any, key: Any) -> bool:
    """Whether a field holds the entity's key: text equal to it, or a number under a name ending in ``id`` (small
    numbers are too common to name an entity on their own)."""
    if not _plain(value) or not same(value, key):
        return False
    return isinstance(key, str) or (isinstance(field, str) and field.casefold().endswith("id"))


def records(content: Any, key: Any) -> list[dict[str, Any]]:
    """The objects within ``content`` (itself, or nested in lists and objects) that hold ``key`` as one of their
    plain fields: the records of the entity ``key`` names."""
    if isinstance(content, list):
        return [r for item in content for r in records(item, key)]
    if not isinstance(content, dict):
        return []
    own = [content] if any(_holds(k, v, key) for k, v in content.items()) else []
    return own + [r for v in content.values() if isinstance(v, dict | list) for r in records(v, key)]


def shared(
    record: dict[str, Any], args: dict[str, Any], answer: Any, key: Any, same_as: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(answer field, record field) for each fact that ``record`` and ``answer`` (the answer to ``args``) both
    hold as plain values: a field both name, or one ``same_as`` declares (answer field → record field); less those
    holding ``key`` in either and those the answer echoes from its request. The facts they must agree on."""
    if not isinstance(answer, dict):
        return []
    echoed = {k for _, k in echo_pairs(args, answer)}
    out = []
    for k, v in answer.items():
        theirs = (same_as or {}).get(k, k)
        if theirs not in record or k in echoed or not _plain(v) or not _plain(record[theirs]):
            continue
        if not same(v, key) and not same(record[theirs], key):
            out.append((k, theirs))
    return out


def disagree(
    record: dict[str, Any], args: dict[str, Any], answer: Any, key: Any, same_as: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """The :func:`shared` facts where ``answer`` holds another value than ``record``: where the second source
    contradicts it."""
    return [(k, r) for k, r in shared(record, args, answer, key, same_as) if not same(record[r], answer[k])]


def contradicted(
    earlier: Any, args: dict[str, Any], answer: Any, key: Any, same_as: Mapping[str, str] | None = None
) -> bool:
    """Whether an earlier answer holds a record of ``key`` that ``answer`` (to ``args``) contradicts."""
    return any(disagree(r, args, answer, key, same_as) for r in records(earlier, key))


def declared(domain: Domain) -> Mapping[str, str]:
    """The fields a domain declares to hold the same fact under other names (``DomainVocabulary.same_fields``)."""
    return domain.vocabulary.same_fields if domain.vocabulary is not None else {}


@dataclass(frozen=True)
class Witness:
    """A call of the gold plan whose answer an earlier one witnesses: ``call`` takes in ``param`` the ``key`` that
    ``lookup``'s answer holds, so the record of ``key`` there must agree with ``call``'s answer."""

    call: str
    lookup: str
    param: str
    key: Any


def witnesses(domain: Domain, task: Task) -> tuple[Witness, ...]:
    """The witnesses the gold plan shows: one per call and earlier call whose tool the plan's dependencies say gave
    a value the call takes (read off the plan replayed on the clean tools, :func:`sandbox.gold_plan.dependencies`)."""
    plan = {c.id: c for c in task.plan}
    out = []
    for dep in dependencies(domain, task):
        for call in task.plan:
            if call.tool == dep.consumer and _plain(call.args.get(dep.param)):
                out += [Witness(call.id, a, dep.param, call.args[dep.param]) for a in call.after
                        if plan[a].tool == dep.lookup]  # fmt: skip
    return tuple(dict.fromkeys(out))
