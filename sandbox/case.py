"""A case: a task plus a stack of perturbations; the unit that tests generate and cache.

``Case.run`` goes through the installed :class:`CaseRunner` when there is one (the pytest
session's, or a user's :class:`sandbox.evaluation.Runner`: cached and recorded) and runs the
episode directly otherwise. The runner is injected with :func:`install_runner`, so the sandbox
knows only the shape of a runner and the evaluation core, which builds on the sandbox, plugs in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sandbox.budget import STEPS_TO_SPARE, plan_steps, step_budget  # noqa: F401 - STEPS_TO_SPARE: where it was
from sandbox.domains import get_domain, make_env
from sandbox.env import Env
from sandbox.episode import Episode, run_episodes
from sandbox.perturbations.base import Perturbation, apply_stack
from sandbox.perturbations.registry import from_dict
from sandbox.task import Task

SANDBOX_VERSION = "8"
"""Bump when worlds, tools, judge or perturbations change behaviour: it invalidates cached episodes."""


_KEY_JSON = json.JSONEncoder(sort_keys=True, default=str)
"""``json.dumps(..., sort_keys=True, default=str)``, built once."""
_TASK_JSON: dict[int, tuple[Task, str]] = {}
_MAX_TASK_JSON = 4096


def _task_json(task: Task) -> str:
    """The task's part of a case key, dumped once per task object: every case of a task, its clean
    twin included, shares the same frozen task, and the dump costs more than the rest of the key."""
    hit = _TASK_JSON.get(id(task))
    if hit is not None and hit[0] is task:  # the task is held, so its id is not reused while cached
        return hit[1]
    text = _KEY_JSON.encode(task.model_dump(mode="json"))
    if len(_TASK_JSON) >= _MAX_TASK_JSON:
        _TASK_JSON.clear()
    _TASK_JSON[id(task)] = (task, text)
    return text


@dataclass(frozen=True)
class Case:
    task: Task
    perturbations: tuple[Perturbation, ...] = ()

    def env(self) -> Env:
        return apply_stack(make_env(self.task.domain, self.task), self.perturbations)

    @property
    def max_steps(self) -> int:
        """The step limit: the clean one (:func:`plan_steps`) plus the turns the perturbations cost a perfect agent."""
        return step_budget(self.perturbations, plan_steps(self.task))

    def run(self, agent: Any, max_steps: int | None = None) -> Episode:
        """The agent's episode on this case, through the installed runner if there is one."""
        if _runner is not None:
            episode, clean = _runner.run(agent, self, max_steps)
            return episode.beside(clean, bool(self.perturbations))
        return run_cases(agent, [self], max_steps)[0]

    def run_with_clean(self, agent: Any, max_steps: int | None = None) -> tuple[Episode, Episode]:
        """The episode and its clean twin's (the same one for a clean case), in one batch where the budgets agree."""
        if _runner is not None:
            return _runner.run(agent, self, max_steps)
        if not self.perturbations:
            episode = run_cases(agent, [self], max_steps)[0]
            return episode, episode
        clean = self.clean()
        if max_steps is not None or clean.max_steps == self.max_steps:
            episode, twin = run_cases(agent, [self, clean], max_steps)
            return episode, twin
        # Each at its own budget, as the episode cache runs them: an episode never depends on its batch.
        return run_cases(agent, [self])[0], run_cases(agent, [clean])[0]

    def clean(self) -> Case:
        """The unperturbed twin."""
        return Case(self.task)

    @property
    def solvable(self) -> bool:
        """Whether the gold act is to solve (not refuse): the perturbed env decides, since an
        unsolvable perturbation that does not apply to the task leaves it solvable. A drift is read as
        arrived (its static twin's env): an onset applies only where the gold plan is still under way then."""
        return self.static().env().solvable

    def static(self) -> Case:
        """The same perturbations, each from before the first turn (``after=0``): a drift case's static twin."""
        if not any(p.after for p in self.perturbations):
            return self
        return Case(self.task, tuple(p.static() for p in self.perturbations))

    def describe(self) -> str:
        stack = " + ".join(p.label() for p in self.perturbations) or "clean"
        return f"{self.task.id} [{self.task.family}, {self.task.n_calls} calls] | {stack}"

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task.model_dump(mode="json"), "perturbations": [p.to_dict() for p in self.perturbations]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Case:
        return cls(Task.model_validate(data["task"]), tuple(from_dict(p) for p in data["perturbations"]))

    def key(self) -> str:
        """A content hash of the case, the sandbox version and its domain's version, for caching episodes.

        The hash of ``json.dumps([version, self.to_dict()], sort_keys=True, default=str)``, where the
        version is ``SANDBOX_VERSION`` (and, for a domain the user writes, the digest of its code),
        assembled from parts (the task's part is dumped once per task), and kept on the case: the
        cache, the record and the report all ask for it.
        """
        key = self.__dict__.get("_key")
        if key is None:
            stack = _KEY_JSON.encode([p.to_dict() for p in self.perturbations])
            version = json.dumps(_domain_version(self.task.domain))
            blob = f'[{version}, {{"perturbations": {stack}, "task": {_task_json(self.task)}}}]'
            key = hashlib.sha256(blob.encode()).hexdigest()[:32]
            object.__setattr__(self, "_key", key)  # a frozen case: a cached value, not a field
        return key

    def __repr__(self) -> str:
        return f"Case({self.describe()})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints dataclasses field by field; a falsifying example should read as one line.
        printer.text(repr(self))


class CaseRunner(Protocol):
    """What ``Case.run`` goes through once installed: :class:`sandbox.evaluation.Runner` is one."""

    def run(self, agent: Any, case: Case, max_steps: int | None = None) -> tuple[Episode, Episode]:
        """The case's episode and its clean twin's."""
        ...


_runner: CaseRunner | None = None


def install_runner(runner: CaseRunner | None) -> CaseRunner | None:
    """Route every ``Case.run`` through ``runner`` (``None``: run directly); returns the one it
    replaces, to put back afterwards (the pytest session does, when it ends)."""
    global _runner
    previous, _runner = _runner, runner
    return previous


def current_runner() -> CaseRunner | None:
    """The installed runner, or ``None`` when cases run directly."""
    return _runner


def run_cases(
    agent: Any,
    cases: Sequence[Case],
    max_steps: int | Sequence[int] | None = None,
    window: int | None = None,
    on_end: Callable[[int, Episode], None] | None = None,
) -> list[Episode]:
    """Run the cases in lockstep, at most ``window`` at a time, ``on_end(i, episode)`` as each ends (see
    :func:`~sandbox.episode.run_episodes`); ``max_steps=None`` gives each case its own budget (``case.max_steps``)."""
    budgets = [c.max_steps for c in cases] if max_steps is None else max_steps
    return run_episodes(agent, [c.env() for c in cases], budgets, window, on_end)


def _domain_version(name: str) -> str:
    """``SANDBOX_VERSION``, plus the version of a user's domain (``Domain.version``): its code is in the key."""
    try:
        extra = get_domain(name).version()
    except LookupError:  # a task of a domain that is not registered (built by hand): the task's JSON is all
        extra = ""
    return f"{SANDBOX_VERSION}+{extra}" if extra else SANDBOX_VERSION
