"""Tier 2, Interaction, a record filed under the wrong key, that an earlier answer contradicts (``deceptive_record``).

A lie here is the world's own record of another entity served under the key asked for: asked about ``P332``, the
detail tool answers with another place's record, the fields that echo the request set to what was asked (a cache
that files a record under the wrong key, a join on the wrong row). Its echo agrees, so asking "is this what I
asked about?" tells nothing; a second tool tells: the lookup that gave the key answered about the same entity, and a
field both name (``name``, ``rating``, ``birth_year``) holds another value there
(:mod:`sandbox.perturbations.witness`). Asked again, the tool tells the truth. Nothing here knows a domain: which
calls may lie and which answer witnesses each is read off the gold plan replayed on the clean tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sandbox.budget import user_turns
from sandbox.domains import domain_of, make_env
from sandbox.env import Env
from sandbox.gold_plan import gold_results, may_write
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.echo import contradicts, same
from sandbox.perturbations.interaction.deception import EXTRA_TURNS, Deceive, Lie, changes_reading, other_requests
from sandbox.perturbations.registry import register
from sandbox.perturbations.witness import declared, disagree, records, shared, witnesses
from sandbox.perturbations.wrappers import clone
from sandbox.task import Call, Task
from sandbox.tools import ToolResult

FAMILY = "deceptive_record"


@dataclass(frozen=True)
class Misfiled(Lie):
    """A read of the gold plan that may answer with another entity's record: ``witness`` is the earlier call whose
    answer holds the entity's record, ``fields`` the answer's fields that record also holds (they agree in the clean
    world)."""

    witness: str
    fields: tuple[str, ...]


def refile(args: dict[str, Any], truth: Any, told: Any) -> Any:
    """``told`` (another entity's record) with each top-level field that echoes ``args`` in ``truth`` (holds an
    argument's value) set as ``truth`` has it: the record filed under the key asked for."""
    if not isinstance(truth, dict) or not isinstance(told, dict):
        return None
    out = clone(told)
    for key, value in truth.items():
        if key in out and any(same(value, a) for a in args.values() if isinstance(a, str | int | float)):
            out[key] = value
    return out


_FOUND: dict[tuple[str, int, str, int, str], tuple[Misfiled, ...]] = {}


def misfilings(task: Task, seed: int = 0, pool: str = "eval") -> tuple[Misfiled, ...]:
    """The reads of ``task``'s gold plan that may answer with another entity's record: those an earlier answer
    witnesses (:func:`~sandbox.perturbations.witness.witnesses`) on at least one field that agrees in the clean
    world, each with up to two other requests whose records, filed under the key asked for, that witness
    contradicts and that change what the task reads. Replayed once per task, seed and pool."""
    key = (task.domain, id(domain_of(task)), task.id, seed, pool)
    if key in _FOUND:
        return _FOUND[key]
    found: list[Misfiled] = []
    if task.solvable and user_turns(task) is None:
        domain = domain_of(task)
        results, writing = gold_results(domain, task), may_write(domain, task)
        env = make_env(domain, task)
        try:
            env.reset()
            for call in [c for wave in task.waves() for c in wave]:
                truth = results.get(call.id)
                if call.tool not in writing and truth is not None and truth.ok and isinstance(truth.content, dict):
                    lie = _misfiling(task, call, truth.content, results, env, seed, pool)
                    if lie is not None:
                        found.append(lie)
                env.call(call.tool, call.args)
        except Exception:  # a world that fails on a replay lends no lie
            found = []
    if len(_FOUND) >= 4096:
        _FOUND.clear()
    _FOUND[key] = tuple(found)
    return _FOUND[key]


def _misfiling(
    task: Task, call: Call, truth: dict[str, Any], results: dict[str, ToolResult], env: Env, seed: int, pool: str
) -> Misfiled | None:
    checks = []
    same_as = declared(domain_of(task))
    for w in witnesses(domain_of(task), task):
        earlier = results.get(w.lookup)
        if w.call != call.id or earlier is None or not earlier.ok:
            continue
        for record in records(earlier.content, w.key):
            fields = shared(record, call.args, truth, w.key, same_as)
            if fields and not disagree(record, call.args, truth, w.key, same_as):
                checks.append((w, record, tuple(k for k, _ in fields)))
    if not checks:
        return None
    instead = []
    for other in other_requests(task, call, seed, pool, FAMILY):
        answer = env.call(call.tool, other)
        told = refile(call.args, truth, answer.content) if answer.ok else None
        if (
            told is not None
            and told != truth
            and not contradicts(call.args, told)
            and any(disagree(record, call.args, told, w.key, same_as) for w, record, _ in checks)
            and changes_reading(task, call, truth, told)
        ):
            instead.append(other)
        if len(instead) == 2:
            break
    if not instead:
        return None
    witness, _, agreeing = checks[0]
    return Misfiled(call.id, call.tool, call.args, tuple(instead), witness.lookup, agreeing)


class Misfile(Deceive):
    def tell(self, arguments: dict[str, Any], truth: Any, told: ToolResult) -> Any:
        content = refile(arguments, truth, told.content) if told.ok else None
        return None if content is None or content == truth else content

    def found(self) -> tuple[Misfiled, ...]:
        return misfilings(self.task, self.spec.seed, self.spec.pool)


@register
class DeceptiveRecord(Perturbation):
    name: ClassVar[str] = FAMILY
    tier = "interaction"
    shift = "observation"
    paft_family = ""
    summary = (
        "a read answers with another entity's record filed under the key asked for (its echo agrees); the earlier "
        "answer that gave the key names a field both hold, and holds another value there; asked again, the truth "
        "(1: one call lies once; 2: every such call once; 3: twice in a row)"
    )
    expected = (
        "compare the record with what an earlier tool said of the same entity, notice the mismatch and ask again; "
        "never report the wrong value"
    )
    min_severity = 0
    max_severity = 3
    limits = (
        "a case with no read on the gold path that takes a value an earlier answer gave and shares a field with "
        "that answer's record of it (agreeing in the clean world), or none where another request's record "
        "contradicts it and changes what the task reads; a task of several user turns (bfcl's)"
    )
    layer = "deception"

    needs_calls = True
    wrapper = Misfile

    def applies_to(self, task: Task) -> bool:
        return bool(task.plan) and (self.severity == 0 or bool(misfilings(task, self.seed, self.pool)))

    def extra_turns(self) -> int:
        return EXTRA_TURNS[self.severity]
