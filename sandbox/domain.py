"""A domain: its tools, a world and a state factory, and its tasks (drawn from families, or listed).

A domain gives tasks one of two ways. By **families** (POI, medical): a world generator and task
families draw as many distinct tasks per split as asked (:data:`DEFAULT_SIZES` by default). By a
**list** (a user's domain, :func:`sandbox.define_domain`): the list is every split, however short.
Each episode gets a fresh state of the domain's own type from ``new_state(seed)`` (``None`` where
the domain has none); tools written as functions receive it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from sandbox.computed import Computed
from sandbox.errors import OpenAgentError, UnknownName, UsageError
from sandbox.family import Family
from sandbox.seeds import child_seed, rng
from sandbox.task import SPLITS, Split, Task
from sandbox.tools import Tool, Toolbox
from sandbox.vocabulary import DomainVocabulary

if TYPE_CHECKING:
    from sandbox.judge import Outcome
    from sandbox.trajectory import Episode


class StartFailure(OpenAgentError):
    """A domain's world or state factory raised: no episode of the task can start (each ends as an
    ``agent_error`` that says so, and runs again next time); the domain's code is the one to fix."""


DEFAULT_SIZES: Mapping[str, int] = {"train": 6000, "dev": 400, "test": 880}
"""Tasks per split of a domain with families, when no number is asked for (at most: fewer if fewer exist)."""

EndState = Callable[[Any], bool]
"""Whether an episode's final state (the domain's own object) is the one the task asks for."""
Check = Callable[["Episode", Any], "Outcome"]
"""A user's judge of one task: ``check(episode, state) -> Outcome``; ``episode.outcome`` holds the common
judge's verdict, ``state`` is the episode's final state (the domain's own object)."""


@dataclass(frozen=True)
class Expectation:
    """How one listed task is judged beyond the answer fields: its end state, or the user's own check."""

    end_state: EndState | None = None
    check: Check | None = None
    computed: Mapping[str, Computed] = field(default_factory=dict)
    """Answer fields computed by the user's functions (:class:`~sandbox.computed.Computed`), by key."""


@dataclass(frozen=True, eq=False)
class Domain:
    """Build one with :func:`sandbox.define_domain` (ours are built so too); the fields are its parts."""

    name: str
    build_world: Callable[[int], Any] | None = None
    tools: tuple[Tool, ...] = ()
    families: tuple[Family, ...] = ()
    new_state: Callable[[int], Any] | None = None
    listed: tuple[Task, ...] = ()
    """The tasks of a domain that lists them (every split); empty for a domain with families."""
    expectations: Mapping[str, Expectation] = field(default_factory=dict)
    """Per listed task id: its end state or user check, when it has one."""
    sizes: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    vocabulary: DomainVocabulary | None = None
    """What the domain tells the perturbations and the oracle about its own words (``None``: the generic rules)."""

    def __post_init__(self) -> None:
        self.toolbox  # built now, so that a tool whose spec cannot be built fails here  # noqa: B018

    @cached_property
    def toolbox(self) -> Toolbox:
        """The tools by name, as episodes call them."""
        return Toolbox({t.name: t for t in self.tools})

    def version(self) -> str:
        """What a case key adds for this domain, so that editing a world invalidates its cached episodes.

        Empty for a domain of generated families (ours: ``SANDBOX_VERSION`` covers them); for a domain
        the user writes, a digest of the code of its tools, its state factory and its checks, and of
        the source files of their modules.
        """
        return _version(self)

    def tools_for(self, task: Task) -> tuple[Tool, ...]:
        """The clean tools of ``task``: the domain's own (:attr:`tools`), which all its tasks share. A domain
        that gives its tools per task (``bfcl``: those of the task's backends) says which; the oracle and the
        perturbations read a task's clean tools here, never from :attr:`tools` alone."""
        return self.tools

    def world(self, seed: int = 0) -> Any:
        """The read-only world of ``seed``, built once and shared by every episode (``None`` if the domain has none)."""
        if self.build_world is None:
            return None
        try:
            return _world(self, seed)
        except Exception as exc:
            raise StartFailure(f"the world of domain {self.name!r} failed for seed {seed}: {_error(exc)}") from exc

    def fresh_state(self, seed: int = 0) -> Any:
        """A new state object for one episode (``None`` if the domain has no state factory)."""
        if self.new_state is None:
            return None
        try:
            return self.new_state(seed)
        except Exception as exc:
            raise StartFailure(
                f"the state factory of domain {self.name!r} failed for seed {seed}: {_error(exc)}"
            ) from exc

    def family(self, name: str) -> Family:
        for family in self.families:
            if family.name == name:
                return family
        raise UnknownName("task family", name, [f.name for f in self.families])

    def tasks(
        self, split: Split = "test", n: int | None = None, seed: int = 0, families: Sequence[str] | None = None
    ) -> list[Task]:
        """``n`` distinct tasks of ``split`` (all there are, up to its default size, if ``None``), deterministic
        in ``seed``; of the task ``families`` named, if given (the same draw, the others left out). A domain
        that lists its tasks gives its list (the first ``n``) for every split and seed."""
        if split not in SPLITS:
            raise UsageError(f"split must be one of {SPLITS}, got {split!r}")
        only = checked_families(families, [f.name for f in self.families] or [t.family for t in self.listed])
        if self.listed:
            listed = [t for t in _listed(self, split) if only is None or t.family in only]
            if n is not None and n > len(listed):
                raise UsageError(f"{self.name}: {len(listed)} tasks are listed, {n} were asked for")
            return listed[:n]
        if n is None:
            size = self.sizes.get(split, DEFAULT_SIZES[split])
            return list(_tasks(self, split, size, seed, exact=False, families=only))
        return list(_tasks(self, split, n, seed, exact=True, families=only))

    def draw(self, split: Split, index: int, seed: int = 0) -> Task | None:
        """Task number ``index`` of the stream behind :meth:`tasks`; ``None`` if that draw is void."""
        if self.listed:
            return _listed(self, split)[index % len(self.listed)]
        world = self.world(seed)
        family = self.families[index % len(self.families)]
        r = rng(seed, self.name, split, index)
        draft = family.draft(world, r, split)
        if draft is None:
            return None
        phrasing = r.randrange(len(family.phrasings))
        key = json.dumps([family.name, draft.params], sort_keys=True)
        return Task(
            id=f"{self.name}-{split}-{family.name}-{child_seed(seed, key):08x}",
            domain=self.name, family=family.name, split=split, seed=seed,
            params=draft.params, phrasing=phrasing, query=family.phrasings[phrasing].format(**draft.params),
            plan=tuple(draft.plan), answer=draft.answer, sources=draft.sources, write=draft.write,
            unsolvable=family.unsolvable,
        )  # fmt: skip

    def end_state_ok(self, task: Task, state: Any) -> bool | None:
        """Whether ``state`` (an episode's :class:`~sandbox.state.State`) ends as ``task`` expects; ``None``
        when the task expects no particular end state."""
        expected = self.expectations.get(task.id)
        if expected is None or expected.end_state is None:
            return None
        return bool(expected.end_state(getattr(state, "data", state)))

    def computed(self, task: Task) -> Mapping[str, Computed]:
        """The user's functions that compute ``task``'s answer fields, by key (none for a path)."""
        expected = self.expectations.get(task.id)
        return {} if expected is None else expected.computed

    def check(self, task: Task) -> Check | None:
        """The user's own judge of ``task``, if it has one."""
        expected = self.expectations.get(task.id)
        return None if expected is None else expected.check

    def __repr__(self) -> str:
        given = f"{len(self.listed)} tasks" if self.listed else f"{len(self.families)} families"
        return f"Domain({self.name!r}, {len(self.tools)} tools, {given})"


def _error(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {str(exc)[:500]}"
    except Exception:  # a __str__ that raises
        return type(exc).__name__


# Cached by the domain itself (a Domain hashes by identity), so this module needs no registry of domains.
@lru_cache(maxsize=8)
def _world(domain: Domain, seed: int) -> Any:
    assert domain.build_world is not None
    return domain.build_world(seed)


def checked_families(families: Sequence[str] | None, known: Sequence[str]) -> frozenset[str] | None:
    """``families`` as a set (``None``: all), each one of the task families ``known``; else
    :class:`~sandbox.errors.UnknownName` (with "did you mean") or, for none at all, a usage error."""
    if families is None:
        return None
    known = list(dict.fromkeys(known))
    if not families:
        raise UsageError(f"task families: none given; name some of {', '.join(known)}")
    for name in families:
        if name not in known:
            raise UnknownName("task family", name, known)
    return frozenset(families)


@lru_cache(maxsize=32)
def _tasks(
    d: Domain, split: Split, n: int, seed: int, exact: bool, families: frozenset[str] | None = None
) -> tuple[Task, ...]:
    tasks: dict[str, Task] = {}
    index = 0
    share = 1 if families is None else len(families) / len(d.families)  # of the draws that can be kept
    while len(tasks) < n:
        if index > (50 * n + 1000) / share:
            if not exact:
                break  # the default size is a ceiling: a small domain gives what it has
            raise UsageError(f"{d.name}/{split}: only {len(tasks)} distinct tasks exist, {n} were asked for")
        task = d.draw(split, index, seed)
        index += 1
        if task is not None and task.id not in tasks and (families is None or task.family in families):
            tasks[task.id] = task
    return tuple(tasks.values())


@lru_cache(maxsize=64)
def _listed(d: Domain, split: Split) -> tuple[Task, ...]:
    return tuple(t if t.split == split else t.model_copy(update={"split": split}) for t in d.listed)


@lru_cache(maxsize=64)
def _version(domain: Domain) -> str:
    if domain.new_state is None and not domain.listed and not domain.expectations:
        return ""
    from sandbox.fingerprint import function_key

    parts = [function_key(t.fn, module_source=True) for t in domain.tools]
    if domain.new_state is not None:
        parts.append(function_key(domain.new_state, module_source=True))
    for task_id, expectation in sorted(domain.expectations.items()):
        for judged in (expectation.end_state, expectation.check, *(c.fn for c in expectation.computed.values())):
            if callable(judged):
                parts.append(f"{task_id}:{function_key(judged, module_source=True)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
