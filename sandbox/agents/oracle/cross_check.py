"""The oracle's cross-checks: which answers of reads the world itself contradicts, so are not read but asked again.

Two rules, each reading names and values only (no domain's tools). An answer whose echo of the request names another
entity than the one asked for (:func:`~sandbox.perturbations.echo.contradicts`: ``deceptive_result``'s lie). And an
answer that an earlier answer about the same entity contradicts: the lookup that gave the value the call took holds a
record of that entity, and a field both name holds another value there
(:func:`~sandbox.perturbations.witness.contradicted`: ``deceptive_record``'s lie). In the clean world neither fires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from sandbox.budget import user_turns
from sandbox.domains import get_domain
from sandbox.gold_plan import may_write
from sandbox.perturbations.echo import contradicts
from sandbox.perturbations.witness import contradicted, declared, witnesses
from sandbox.task import Task


class Attempt(Protocol):
    """One call as the oracle's view holds it (``sandbox.agents.oracle.observations.Attempt``)."""

    result: Any
    normalized: Any
    answered: bool
    suspect: bool


def cross_check(task: Task, attempts: Mapping[str, Sequence[Attempt]], done: Callable[[str], Any]) -> None:
    """Mark the answers of reads that the world contradicts (``Attempt.suspect``), of ``attempts`` by step;
    ``done(step)`` is a step's answer as read, once it stands. One the tool gives twice in a row is how the world
    answers that request, and is read; a write's is never doubted (asking again would write again), nor one of a
    task of several user turns (this turn's part of it would stand for the whole task in the replay that tells the
    writes)."""
    if user_turns(task) is not None:
        return
    domain = get_domain(task.domain)
    writing = may_write(domain, task)
    asked = {c.id: c.args for c in task.plan if c.tool not in writing}
    for step, tries in attempts.items():
        args = asked.get(step)
        if args is not None:
            _doubt(tries, partial(contradicts, args))
    same_as = declared(domain)
    for w in witnesses(domain, task):
        args = asked.get(w.call)
        # the lookup's answer as read (its pages too), once it stands: the second source
        earlier = tuple(e for s in attempts if s == w.lookup or s.startswith(f"{w.lookup}~p")
                        if (e := done(s)) is not None)  # fmt: skip
        if args is not None and earlier:
            _doubt(attempts.get(w.call, ()), partial(_witnessed_wrong, earlier, args, w.key, same_as))


def _witnessed_wrong(
    earlier: tuple[Any, ...], args: dict[str, Any], key: Any, same_as: Mapping[str, str], answer: Any
) -> bool:
    return any(contradicted(e, args, answer, key, same_as) for e in earlier)


def _doubt(tries: Sequence[Attempt], wrong: Callable[[dict[str, Any]], bool]) -> None:
    before = None
    for attempt in tries:
        if attempt.answered and isinstance(attempt.normalized, dict) and not attempt.suspect:
            attempt.suspect = wrong(attempt.normalized) and not (
                before is not None and before.answered and before.result == attempt.result
            )
        before = attempt
