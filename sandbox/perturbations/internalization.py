"""Tier 4, Internalization: a new domain, and cases where the right act is to refuse."""

from __future__ import annotations

from typing import Any, ClassVar

from sandbox.budget import user_turns
from sandbox.domains import domain_of, get_domain
from sandbox.env import Env
from sandbox.gold_plan import SCORED_BY_TURN, asked, dependencies, gold_results, needed_after
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.vocab import vocabulary
from sandbox.perturbations.wrappers import (
    CallWrapper,
    PerturbationWrapper,
    Route,
    ToolSpec,
    ToolsWrapper,
    failure,
)
from sandbox.seeds import rng
from sandbox.task import Task, read_path
from sandbox.tools import ToolResult


class _Transferred(PerturbationWrapper):
    """Marks the stack: the env below it is the held-out twin of the task."""


def held_out_twin(task: Task, seed: int) -> Task:
    """A task of the held-out domain, of the same split and the same kind (solvable, or unsolvable for the
    same reason)."""
    words = vocabulary(task.domain)
    assert words is not None and words.transfer is not None, task.domain  # applies_to admits only such domains
    target = get_domain(words.transfer)
    kinds = [i for i, f in enumerate(target.families) if f.unsolvable == task.unsolvable]
    r = rng(seed, "domain_transfer", task.id)
    while True:
        index = r.randrange(200) * len(target.families) + r.choice(kinds)
        twin = target.draw(task.split, index, task.seed)
        if twin is not None:
            return twin


@register
class DomainTransfer(Perturbation):
    name: ClassVar[str] = "domain_transfer"
    tier = "internalization"
    shift = "domain"
    paft_family = ""
    summary = (
        "the POI task is replaced by a medical task of the same split and kind (the clean twin stays the POI task)"
    )
    expected = "carry the learned patterns (look up, chain, act) into an unseen domain"
    limits = "a domain that names no held-out twin (only POI does: medical)"
    layer = "domain"

    def applies_to(self, task: Task) -> bool:
        words = vocabulary(task.domain)
        return words is not None and words.transfer is not None

    def apply(self, env: Env) -> Env:
        if not self.applies_to(env.task):
            return env
        twin_task = held_out_twin(env.task, self.seed)
        twin: Env = Env(get_domain(twin_task.domain), twin_task)
        for wrapper in env.wrappers():
            spec = getattr(wrapper, "spec", None)
            if spec is not None:
                twin = spec.apply(twin)
        return _Transferred(twin, self)


class _Without(ToolsWrapper):
    @property
    def solvable(self) -> bool:
        self.routes  # noqa: B018 - choosing the tool to remove decides the answer
        return self.env.solvable and self.gone is None

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = {s["function"]["name"] for s in specs}
        needed = [t for t in needed_after(self.task, self.spec.after) if t in names]
        self.gone = self.rng().choice(needed) if needed else None
        return [Route(s, target=s["function"]["name"]) for s in specs if s["function"]["name"] != self.gone]


@register
class MissingCapability(Perturbation):
    name: ClassVar[str] = "missing_capability"
    tier = "internalization"
    shift = "action"
    paft_family = "error_feedback"
    summary = "a tool the task needs is gone (with an onset: withdrawn for good mid-episode, one not yet needed)"
    expected = "refuse: say that no available tool can do it"
    unsolvable = True
    layer = "unsolvable"
    drifts = True

    needs_calls = True
    limits = SCORED_BY_TURN + "; with an onset, a plan of no more waves than the onset's turns"

    def applies_to(self, task: Task) -> bool:
        return super().applies_to(task) and user_turns(task) is None and bool(needed_after(task, self.after))

    wrapper = _Without


def named_entity(task: Task) -> tuple[str, frozenset[str]] | None:
    """For a domain without a lookup by name of its own: the value of the request that the first call takes
    (the entity the request names), and the values later calls took from that call's answer (its ids)."""
    given = asked(task)
    results = gold_results(domain_of(task), task)
    for call in task.waves()[0] if task.plan else []:
        value = next((v for v in call.args.values() if not isinstance(v, list | dict) and v in given), None)
        if value is not None and call.id in results and results[call.id].ok:
            content = results[call.id].content
            ids = {read_path(content, d.path) for d in dependencies(domain_of(task), task) if d.lookup == call.tool}
            return value, frozenset(str(i) for i in ids if i is not None)
    return None


class _Ghost(CallWrapper):
    @property
    def solvable(self) -> bool:
        return self.env.solvable and self._target() is None and self._named() is None

    def _named(self) -> tuple[str, frozenset[str]] | None:
        return named_entity(self.task) if vocabulary(self.domain) is None else None

    def _target(self) -> tuple[str, str, str, str] | None:
        name, words = self.task.params.get("name"), vocabulary(self.domain)
        if not isinstance(name, str) or words is None or words.resolve is None:
            return None
        for call in self.task.plan:
            if call.tool == words.finder and call.args.get("name") == name:
                city = call.args["city"]
                found = words.resolve(self.unwrapped.world, name, city)
                if found is not None:
                    return call.tool, name, city, found.id
        return None

    def call(self, name: str, arguments: Any) -> ToolResult:
        named = self._named()
        if named is not None and isinstance(arguments, dict):
            return self._ghost_call(name, arguments, *named)
        target = self._target()
        if target is None or not isinstance(arguments, dict):
            return self.env.call(name, arguments)
        finder, ghost, _, ghost_id = target
        words = vocabulary(self.domain)
        assert words is not None  # _target found one
        kind = words.entity
        if name == finder and str(arguments.get("name", "")).casefold() == ghost.casefold():
            return failure(name, "not_found", f"no {kind} named {arguments['name']!r} in {arguments.get('city')!r}")
        if ghost_id in arguments.values():
            return failure(name, "not_found", f"no {kind} with id {ghost_id!r}")
        result = self.env.call(name, arguments)
        if result.ok and isinstance(result.content, dict) and isinstance(result.content.get("results"), list):
            rows = [row for row in result.content["results"] if row.get("id") != ghost_id]
            result = result.model_copy(update={"content": {**result.content, "results": rows}})
        return result

    def _ghost_call(self, name: str, arguments: dict[str, Any], ghost: str, ids: frozenset[str]) -> ToolResult:
        values = {str(v).casefold() for v in arguments.values()}
        if ghost.casefold() in values:
            return failure(name, "not_found", f"nothing matches {ghost!r}")
        if values & {i.casefold() for i in ids}:
            return failure(name, "not_found", f"no entry {next(v for v in arguments.values() if str(v) in ids)!r}")
        result = self.env.call(name, arguments)
        if result.ok and isinstance(result.content, dict):
            content = {k: [row for row in v if not (isinstance(row, dict) and set(map(str, row.values())) & ids)]
                       if isinstance(v, list) else v for k, v in result.content.items()}  # fmt: skip
            result = result.model_copy(update={"content": content})
        return result


@register
class NonexistentEntity(Perturbation):
    name: ClassVar[str] = "nonexistent_entity"
    tier = "internalization"
    shift = "domain"
    paft_family = ""
    summary = (
        "the place or patient the request names does not exist in this world (elsewhere: what the first call takes "
        "from the request, and the ids its answer gave)"
    )
    expected = "refuse once the lookup finds nothing, instead of inventing an answer"
    unsolvable = True
    limits = (
        "a task whose lookup takes no entity named in the request (on a domain without a lookup by name of its own: "
        "whose first calls take no value of the request); " + SCORED_BY_TURN
    )
    layer = "unsolvable"

    def applies_to(self, task: Task) -> bool:
        name, words = task.params.get("name"), vocabulary(task.domain)
        if user_turns(task) is not None:
            return False
        if words is None:
            return task.solvable and named_entity(task) is not None
        if words.resolve is None:
            return False
        return task.solvable and any(c.tool == words.finder and c.args.get("name") == name for c in task.plan)

    wrapper = _Ghost


class _Fatal(CallWrapper):
    @property
    def solvable(self) -> bool:
        return self.env.solvable and not self.task.plan

    def call(self, name: str, arguments: Any) -> ToolResult:
        if "broken" not in self.scratch:
            tools = sorted({c.tool for c in self.task.plan})
            self.scratch["broken"] = self.rng().choice(tools) if tools else None
        if name == self.scratch["broken"]:
            return failure(name, "fatal", self.rng("text").choice(self.words(vocab.FATAL_ERRORS)))
        return self.env.call(name, arguments)


@register
class FatalError(Perturbation):
    name: ClassVar[str] = "fatal_error"
    tier = "internalization"
    shift = "observation"
    paft_family = "error_feedback"
    summary = "a tool the task needs fails for good"
    expected = "refuse after the permanent failure instead of retrying forever or inventing a result"
    unsolvable = True
    layer = "unsolvable"

    needs_calls = True
    limits = SCORED_BY_TURN

    def applies_to(self, task: Task) -> bool:
        return super().applies_to(task) and user_turns(task) is None

    wrapper = _Fatal
