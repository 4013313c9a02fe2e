"""The ``bfcl`` domain: BFCL's fixed multi-turn tasks over its backends, one fresh env per episode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from sandbox.domain import Domain
from sandbox.domains.bfcl.data import CATEGORIES, Entry, class_specs, entries, task
from sandbox.domains.bfcl.env import BfclEnv
from sandbox.errors import UnknownName, UsageError
from sandbox.task import SPLITS, Split, Task
from sandbox.tools import Tool


@cache
def _tasks(category: str) -> tuple[Task, ...]:
    return tuple(task(e) for e in entries(category))


@cache
def _by_id(category: str) -> dict[str, Entry]:
    return {e.id: e for e in entries(category)}


def _not_run(state: Any, **arguments: Any) -> Any:
    raise RuntimeError("a bfcl tool runs in its episode's BfclEnv (its backends), not through the domain's Tool")


@cache
def _tools(classes: tuple[str, ...]) -> tuple[Tool, ...]:
    """The clean tools of the backends ``classes``, as BFCL documents them (one tuple per set of backends). Their
    roles are known by observation: the env notes every call that changes the backends as a write."""
    return tuple(replace(Tool.from_spec(spec, _not_run), role_known=True)
                 for cls in classes for _, spec in class_specs(cls))  # fmt: skip


def _no_world(seed: int) -> Any:
    return None  # the backends' state is per episode (BfclEnv.reset), not per seed


@dataclass(frozen=True, eq=False)
class BfclDomain(Domain):
    """A domain with a fixed list of tasks (BFCL's, all in the ``test`` split) instead of generated
    families, and an env per task that owns its backend instances."""

    def tasks(
        self,
        split: Split = "test",
        n: int | None = None,
        seed: int = 0,
        families: Sequence[str] | None = None,
        *,
        category: str | None = None,
    ) -> list[Task]:
        """The first ``n`` tasks (all if ``None``) of ``category`` or of the categories ``families`` names (BFCL's
        categories are its families; all four, in order, if neither is given).

        ``seed`` changes nothing: the tasks are BFCL's. Only ``test`` has tasks."""
        if split not in SPLITS:
            raise UsageError(f"split must be one of {SPLITS}, got {split!r}")
        categories = tuple(families) if families else (category,) if category is not None else CATEGORIES
        for c in categories:
            if c not in CATEGORIES:
                raise UnknownName("BFCL category", c, list(CATEGORIES))
        if split != "test":
            return []
        chosen = [t for c in categories for t in _tasks(c)]
        return chosen if n is None else chosen[:n]

    def draw(self, split: Split, index: int, seed: int = 0) -> Task | None:
        tasks = self.tasks(split)
        return tasks[index % len(tasks)] if tasks else None

    def entry(self, task_id: str) -> Entry:
        category = task_id.rsplit("_", 1)[0]
        if category not in CATEGORIES:
            raise UnknownName("BFCL category", category, list(CATEGORIES))
        try:
            return _by_id(category)[task_id]
        except KeyError:
            raise UnknownName("BFCL task", task_id, list(_by_id(category))) from None

    def tools_for(self, task: Task) -> tuple[Tool, ...]:
        """The functions of the task's backends (held-back ones too: they are the task's, shown later)."""
        return _tools(self.entry(task.id).classes)

    def make_env(self, task: Task) -> BfclEnv:
        return BfclEnv(self, self.entry(task.id), task)


BFCL = BfclDomain("bfcl", _no_world, (), ())
