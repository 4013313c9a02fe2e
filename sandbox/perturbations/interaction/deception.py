"""Tier 2, Interaction, answers that lie plausibly where the world holds a cross-check (``deceptive_result``).

A lie here is the world's own answer to another request: asked about one entity, the tool answers about another
(the record of another place, the weather of another city), as a cache serving the wrong key does. It is served
only where the answer echoes its request (:mod:`sandbox.perturbations.echo`), so the answer names the entity it
is about and a reader who compares it with what was asked notices; asked again, the tool tells the truth. Nothing
here knows a domain: which calls may lie, and what about, is read off the gold plan replayed on the clean tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from sandbox.budget import user_turns
from sandbox.domains import domain_of, make_env
from sandbox.gold_plan import dependencies, gold_results, leaf_paths, may_write
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.echo import contradicts, echoes, same
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import CallWrapper
from sandbox.seeds import rng
from sandbox.state import Deception
from sandbox.task import Call, Task, read_path
from sandbox.tools import ToolResult

MAX_TRIED = 6
"""Other requests tried per call when looking for a lie that changes what the task needs."""
LIES = {1: 1, 2: 1, 3: 2}
"""Wrong answers in a row per lying call, by severity, before the tool tells the truth."""
EXTRA_TURNS = {0: 0, 1: 1, 2: 2, 3: 4}
"""Turns a perfect agent needs beyond the clean plan to ask again, by severity."""


@dataclass(frozen=True)
class Lie:
    """A call of the gold plan that may lie: its tool and arguments, and the other requests whose answers it
    serves instead (each verified to name another entity and to change what the task reads from it)."""

    call: str
    tool: str
    args: dict[str, Any]
    instead: tuple[dict[str, Any], ...]


def _key(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def _needed(task: Task, call: Call) -> list[str] | None:
    """The paths of ``call``'s answer the task reads (answer sources, values later calls take); ``None``: any
    field may count (a computed or reduced answer)."""
    paths: list[str] = []
    for src in task.sources.values():
        if call.id in src.computed or (src.call == call.id and (src.reduce or src.pick or "*" in src.path)):
            return None
        if src.call == call.id:
            paths.append(src.path)
    paths += [d.path for d in dependencies(domain_of(task), task) if d.lookup == call.tool]
    return paths


def changes_reading(task: Task, call: Call, truth: Any, told: Any) -> bool:
    """Whether an answer ``told`` in place of ``truth`` changes what ``task`` reads from ``call``'s answer."""
    paths = _needed(task, call)
    if paths is None:
        echoed = {k for _, k in echoes(call.args, truth)}
        return any(v != told.get(k) for k, v in truth.items() if k not in echoed)
    return any(not same(read_path(truth, p), read_path(told, p)) for p in paths if read_path(truth, p) is not None)


def other_requests(
    task: Task, call: Call, seed: int, pool: str, family: str = "deceptive_result"
) -> list[dict[str, Any]]:
    """Other requests of the same tool the world knows of: those of the domain's other tasks of the same split, in
    an order drawn from the seed. Never the task's own (a second place it asks about): a value only a wrong answer
    holds is one the task never gives, so the judge can tell an agent that took it."""
    own = [c.args for c in task.plan if c.tool == call.tool]
    try:
        tasks = domain_of(task).tasks(task.split, seed=task.seed)
    except Exception:  # a domain whose task list cannot be drawn lends no other requests
        tasks = []
    seen = set(map(_key, own))
    rest = []
    for other in tasks:
        for c in other.plan if other.id != task.id else ():
            if c.tool == call.tool and _key(c.args) not in seen:
                seen.add(_key(c.args))
                rest.append(c.args)
    rest.sort(key=_key)
    rng(seed, family, pool, task.id, call.id).shuffle(rest)
    return rest[:MAX_TRIED]


_LIES: dict[tuple[str, int, str, int, str], tuple[Lie, ...]] = {}


def lies(task: Task, seed: int = 0, pool: str = "eval") -> tuple[Lie, ...]:
    """The calls of ``task``'s gold plan that may lie: reads whose clean answer echoes the request, with up to two
    other requests each whose answers, given in the state the call meets, name another entity and change what the
    task reads. Replayed once per task, seed and pool."""
    key = (task.domain, id(domain_of(task)), task.id, seed, pool)  # a domain registered again (edited) is another
    if key in _LIES:
        return _LIES[key]
    found: list[Lie] = []
    if task.solvable and user_turns(task) is None:
        results, writing = gold_results(domain_of(task), task), may_write(domain_of(task), task)
        env = make_env(domain_of(task), task)
        try:
            env.reset()
            for call in [c for wave in task.waves() for c in wave]:
                truth = results.get(call.id)
                if call.tool not in writing and truth is not None and truth.ok and echoes(call.args, truth.content):
                    instead = []
                    for other in other_requests(task, call, seed, pool):
                        told = env.call(call.tool, other)
                        lying = told.ok and contradicts(call.args, told.content)
                        if lying and changes_reading(task, call, truth.content, told.content):
                            instead.append(other)
                        if len(instead) == 2:
                            break
                    if instead:
                        found.append(Lie(call.id, call.tool, call.args, tuple(instead)))
                env.call(call.tool, call.args)
        except Exception:  # a world that fails on a replay lends no lie
            found = []
    if len(_LIES) >= 4096:
        _LIES.clear()
    _LIES[key] = tuple(found)
    return _LIES[key]


def told_values(truth: Any, told: Any) -> tuple[tuple[Any, Any], ...]:
    """(told, true) for each leaf of the wrong answer that differs from the true one at the same path."""
    true = dict(leaf_paths(truth))
    out = []
    for path, value in leaf_paths(told):
        if value is None or isinstance(value, bool) or same(value, true.get(path)):
            continue
        out.append((value, true.get(path)))
    return tuple(out)


class Deceive(CallWrapper):
    def call(self, name: str, arguments: Any) -> ToolResult:
        lie = self._lie(name, arguments)
        if lie is None:
            return self.env.call(name, arguments)
        told_n = self.scratch.get(lie.call, 0)
        truth = self.env.call(name, arguments)
        if not truth.ok:
            return truth
        told = self.env.call(name, lie.instead[told_n])
        content = self.tell(arguments, truth.content, told)
        if content is None:
            return truth
        self.scratch[lie.call] = told_n + 1
        state = self.state
        state.deceptions.append(Deception(name, state.turn, told_values(truth.content, content)))
        return told.model_copy(update={"name": name, "content": content})

    def tell(self, arguments: dict[str, Any], truth: Any, told: ToolResult) -> Any:
        """What is served in place of ``truth``, from the world's answer to another request; ``None``: the truth."""
        return told.content if told.ok and contradicts(arguments, told.content) else None

    def found(self) -> tuple[Lie, ...]:
        """The calls of the task's gold plan that may lie."""
        return lies(self.task, self.spec.seed, self.spec.pool)

    def _lie(self, name: str, arguments: Any) -> Lie | None:
        if not isinstance(arguments, dict):
            return None
        for lie in self._chosen():
            # each wrong answer in a row is another request's, so that two in a row differ
            due = self.scratch.get(lie.call, 0) < min(LIES[self.spec.severity], len(lie.instead))
            asked = set(arguments) == set(lie.args) and all(same(arguments[k], v) for k, v in lie.args.items())
            if lie.tool == name and due and asked:
                return lie
        return None

    def _chosen(self) -> tuple[Lie, ...]:
        found = self.found()
        if self.spec.severity >= 2 or len(found) <= 1:
            return found
        return (self.rng("lying call").choice(found),)


@register
class DeceptiveResult(Perturbation):
    name: ClassVar[str] = "deceptive_result"
    tier = "interaction"
    shift = "observation"
    paft_family = "error_feedback"
    summary = (
        "a read answers about another entity than asked (the world's answer to another request), its echo of the "
        "request showing it; asked again, the truth (1: one call lies once; 2: every such call once; 3: twice in a row)"
    )
    expected = "compare the answer with what was asked, notice the mismatch and ask again; never report the wrong value"
    min_severity = 0
    max_severity = 3
    limits = (
        "a case with no read on the gold path whose answer echoes its request (a field named after a parameter, "
        "holding its value), or none where another request's answer names another entity and changes what the "
        "task reads; a task of several user turns (bfcl's)"
    )
    layer = "deception"

    needs_calls = True
    wrapper = Deceive

    def applies_to(self, task: Task) -> bool:
        return bool(task.plan) and (self.severity == 0 or bool(lies(task, self.seed, self.pool)))

    def extra_turns(self) -> int:
        return EXTRA_TURNS[self.severity]
