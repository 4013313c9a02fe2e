"""A domain bundles a world generator, its tools and its task families."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sandbox.errors import UnknownName
from sandbox.family import Family
from sandbox.seeds import child_seed, rng
from sandbox.task import SPLITS, Split, Task
from sandbox.tools import Tool, Toolbox

DEFAULT_SIZES: dict[str, int] = {"train": 6000, "dev": 400, "test": 880}


@dataclass(frozen=True, eq=False)
class Domain:
    name: str
    build_world: Callable[[int], Any]
    tools: tuple[Tool, ...]
    families: tuple[Family, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "toolbox", Toolbox({t.name: t for t in self.tools}))

    def world(self, seed: int = 0) -> Any:
        return _world(self, seed)

    def family(self, name: str) -> Family:
        for family in self.families:
            if family.name == name:
                return family
        raise UnknownName("task family", name, [f.name for f in self.families])

    def tasks(self, split: Split = "test", n: int | None = None, seed: int = 0) -> list[Task]:
        """``n`` distinct tasks of ``split`` (its default size if ``None``), deterministic in ``seed``."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return list(_tasks(self, split, DEFAULT_SIZES[split] if n is None else n, seed))

    def draw(self, split: Split, index: int, seed: int = 0) -> Task | None:
        """Task number ``index`` of the stream behind :meth:`tasks`; ``None`` if that draw is void."""
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


# Cached by the domain itself (a Domain hashes by identity), so this module needs no registry of domains.
@lru_cache(maxsize=8)
def _world(domain: Domain, seed: int) -> Any:
    return domain.build_world(seed)


@lru_cache(maxsize=32)
def _tasks(d: Domain, split: Split, n: int, seed: int) -> tuple[Task, ...]:
    tasks: dict[str, Task] = {}
    index = 0
    while len(tasks) < n:
        if index > 50 * n + 1000:
            raise ValueError(f"{d.name}/{split}: only {len(tasks)} distinct tasks exist, {n} were asked for")
        task = d.draw(split, index, seed)
        index += 1
        if task is not None and task.id not in tasks:
            tasks[task.id] = task
    return tuple(tasks.values())
