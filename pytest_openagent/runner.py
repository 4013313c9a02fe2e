"""Cases as tests see them: ``case.run(agent)`` goes through the episode cache and is recorded.

The pytest session installs a :class:`~sandbox.evaluation.Runner`; outside pytest a plain one
(memory cache, no records kept beyond the process) serves, so the same test code also runs as a script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.case import Case as SandboxCase
from sandbox.episode import Episode
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.runner import Runner
from sandbox.perturbations.base import Perturbation
from sandbox.task import Task


@dataclass(frozen=True, repr=False)
class Case(SandboxCase):
    """A :class:`sandbox.case.Case` whose ``run`` is cached and recorded for the session report."""

    def run(self, agent: Any, max_steps: int | None = None) -> Episode:
        return current().run(agent, self, max_steps)[0]

    def run_with_clean(self, agent: Any, max_steps: int | None = None) -> tuple[Episode, Episode]:
        """The episode and its clean twin's, in one batch."""
        return current().run(agent, self, max_steps)

    def clean(self) -> Case:
        return Case(self.task)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints dataclasses field by field; a falsifying example should read as one line.
        printer.text(repr(self))


def make_case(task: Task, perturbations: Sequence[Perturbation] = ()) -> Case:
    return Case(task, tuple(perturbations))


_default: Runner | None = None
_installed: Runner | None = None


def current() -> Runner:
    """The session's runner, or a process-wide one with a memory cache when no session is active."""
    global _default
    if _installed is not None:
        return _installed
    if _default is None:
        _default = Runner(EpisodeCache(None))
    return _default


def install(runner: Runner | None) -> Runner | None:
    """Make ``runner`` the current one; returns the one it replaces, to put back afterwards."""
    global _installed
    previous, _installed = _installed, runner
    return previous
