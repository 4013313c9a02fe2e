"""What the gold plan shows about a domain's tools, for perturbations and reference agents that know no domain's
names.

A perturbation that needs a tool's role (a write, a look-up) reads what the tool declares (``Tool.role``,
or ``Tool.writes``) and else what the plan shows (the task's ``write`` is a write, and so is a gold call that
the env notes as one when replayed); one that blanks or repeats answers also spares a tool whose role nobody
knows (:func:`may_write`). One that needs a
dependency (this call takes an id that call returned) reads it off the gold plan replayed on the clean
tools: an argument whose value the result of a call it comes after holds, and where in that result.

Each reading takes the task's domain (the registry's :func:`~sandbox.domains.domain_of` finds it by name).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sandbox.budget import user_turns
from sandbox.domain import Domain, StartFailure
from sandbox.env import clean_env
from sandbox.task import Call, Task, read_path
from sandbox.tools import ToolResult

SCORED_BY_TURN = (
    "a task of several user turns (bfcl): BFCL's checker scores each turn by its calls and the backends' state, "
    "never a refusal, and the episode goes on to the next turn after one"
)
"""Why an unsolvable perturbation does not apply to such a task (see :func:`user_turns`)."""


def writes(domain: Domain, task: Task | None = None) -> set[str]:
    """The tools that write: those that say so, the tool of the task's write, and those whose gold calls the env
    noted as writes (:func:`gold_writes`: ``bfcl``'s, whose functions declare no role)."""
    tools = domain.tools if task is None else domain.tools_for(task)
    out = {t.name for t in tools if getattr(t, "role", None) == "write" or getattr(t, "writes", False)}
    if task is not None:
        if task.write is not None:
            out.add(task.write.tool)
        wrote = gold_writes(domain, task)
        out |= {c.tool for c in task.plan if c.id in wrote}
    return out


def may_write(domain: Domain, task: Task, replay: bool = True) -> set[str]:
    """The tools a perturbation that blanks or repeats answers must leave alone: the writes (:func:`writes`) and
    the tools whose role nobody knows (``Tool.role_known``), which may write. ``replay=False`` reads only what the
    tools say and the task's write, never replaying the gold plan (whose replay is kept per task id: a part of a
    task, as the oracle plans one user turn, must not take the whole task's place)."""
    tools = domain.tools_for(task)
    if replay:
        out = writes(domain, task)
    else:
        out = {t.name for t in tools if getattr(t, "writes", False)} | ({task.write.tool} if task.write else set())
    return out | {t.name for t in tools if not getattr(t, "role_known", True)}


_MAX_CACHED = 4096
_RESULTS: dict[tuple[str, int, str], dict[str, ToolResult]] = {}
_WROTE: dict[tuple[str, int, str], frozenset[str]] = {}
_DEPENDENCIES: dict[tuple[str, int, str], tuple[Dependency, ...]] = {}


def _key(domain: Domain, task: Task) -> tuple[str, int, str]:
    # A user's domain registered again under its name (edited) keeps its task ids: the Domain object tells them apart.
    return task.domain, id(domain), task.id


def gold_results(domain: Domain, task: Task) -> dict[str, ToolResult]:
    """Each call of the gold plan as the clean tools answer it, run in order in a fresh episode of the task's own
    env in ``domain`` (a domain's, as ``bfcl``'s, where it has one); a call of a later user turn first ends the
    turns before it. Kept per task: a Task does not hash, its id names it."""
    hit = _RESULTS.get(_key(domain, task))
    if hit is None:
        env = clean_env(domain, task)
        try:
            env.reset()
        except StartFailure:  # no episode of the task starts, each ends saying why: no results to know
            return {}
        turns = user_turns(task)
        calls = replayed(task)
        hit, wrote, turn = {}, set(), 0
        for call, at in zip(calls, turns or [0] * len(calls), strict=True):
            while turn < at:
                env.next_user_message()
                turn += 1
            before = len(env.state.writes)
            hit[call.id] = env.call(call.tool, call.args)
            if len(env.state.writes) != before:
                wrote.add(call.id)
        if len(_RESULTS) >= _MAX_CACHED:
            _RESULTS.clear()
            _WROTE.clear()
        _RESULTS[_key(domain, task)], _WROTE[_key(domain, task)] = hit, frozenset(wrote)
    return hit


def replayed(task: Task) -> list[Call]:
    """The gold plan's calls in the order :func:`gold_results` makes them: wave by wave, or in plan order where the
    task has several user turns (a plan of several turns being one chain)."""
    return list(task.plan) if user_turns(task) is not None else [call for wave in task.waves() for call in wave]


def gold_writes(domain: Domain, task: Task) -> frozenset[str]:
    """The ids of the gold calls whose replay (:func:`gold_results`) the env noted as a write."""
    gold_results(domain, task)
    return _WROTE.get(_key(domain, task), frozenset())


@dataclass(frozen=True)
class Dependency:
    """``consumer`` takes in ``param`` the value found at ``path`` of what ``lookup`` returns."""

    consumer: str
    lookup: str
    param: str
    path: str


def leaf_paths(content: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf of a JSON-like value with its dotted path (``matches.0.book``)."""
    if isinstance(content, dict):
        items: Iterable[tuple[Any, Any]] = content.items()
    elif isinstance(content, list):
        items = enumerate(content)
    else:
        return [(prefix, content)]
    return [leaf for k, v in items for leaf in leaf_paths(v, f"{prefix}.{k}" if prefix else str(k))]


def carries(param: str, value: Any, path: str, leaf: Any) -> bool:
    """Whether an argument ``param=value`` is the leaf at ``path`` of an earlier answer: a string equal to it, or
    a whole number equal to one under a key that names it (``param`` itself, or a key ending in ``id``): small
    numbers are too common to match on their own."""
    if isinstance(value, str):
        return bool(value) and leaf == value
    if isinstance(value, int) and not isinstance(value, bool) and type(leaf) is int:
        key = path.rsplit(".", 1)[-1].casefold()
        return leaf == value and (key == param.casefold() or key.endswith("id"))
    return False


def dependencies(domain: Domain, task: Task) -> tuple[Dependency, ...]:
    """The dependencies the gold plan shows: one per call argument that a call it comes after returned."""
    hit = _DEPENDENCIES.get(_key(domain, task))
    if hit is None:
        if len(_DEPENDENCIES) >= _MAX_CACHED:
            _DEPENDENCIES.clear()
        hit = _DEPENDENCIES[_key(domain, task)] = _dependencies(domain, task)
    return hit


def _dependencies(domain: Domain, task: Task) -> tuple[Dependency, ...]:
    results = gold_results(domain, task)
    calls = {c.id: c for c in task.plan}
    out: list[Dependency] = []
    for call in task.plan:
        for dep_id in call.after:
            dep, result = calls[dep_id], results.get(dep_id)
            if result is None or not result.ok or dep.tool == call.tool:
                continue
            leaves = leaf_paths(result.content)
            for param, value in call.args.items():
                path = next((p for p, v in leaves if carries(param, value, p, v)), None)
                taken = any(d.consumer == call.tool and d.param == param for d in out)
                if path is not None and not taken and value not in dep.args.values():
                    out.append(Dependency(call.tool, dep.tool, param, path))
    return tuple(out)


def every_use_carries(domain: Domain, task: Task, d: Dependency) -> bool:
    """Whether every call of ``d.consumer`` in the gold plan takes in ``d.param`` the value at ``d.path`` of what a
    call of ``d.lookup`` before it returned: only then can a tool that runs the lookup and reads that path make each
    of them (one that takes another row, the user's own value or one computed from results cannot be made)."""
    results = gold_results(domain, task)
    before: list[Call] = []
    for call in replayed(task):
        if call.tool == d.consumer:
            value = call.args.get(d.param)
            answers = [r for r in (results.get(b.id) for b in before if b.tool == d.lookup) if r is not None and r.ok]
            if value is None or not any(read_path(r.content, d.path) == value for r in answers):
                return False
        before.append(call)
    return True


def asked(task: Task) -> set[str]:
    """The values the request gives: the task's parameters, and (for a task written without them) the string
    arguments of its plan that the query quotes."""
    query = task.query.casefold()
    quoted = {v for c in task.plan for v in c.args.values() if isinstance(v, str) and v and v.casefold() in query}
    return {v for v in task.params.values() if v} | quoted


def needed_after(task: Task, turns: int) -> list[str]:
    """The tools of the gold plan's calls that an agent cannot have made in its first ``turns`` turns (those of
    the plan's waves from ``turns`` on: each wave waits for the one before), sorted: what a drift starting after
    turn ``turns`` may still take away."""
    return sorted({c.tool for wave in task.waves()[turns:] for c in wave})
