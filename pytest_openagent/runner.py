"""Cases as tests see them: ``case.run(agent)`` goes through the episode cache and is recorded.

The pytest session installs a :class:`Runner`; outside pytest a plain one (memory cache, no
records kept beyond the process) serves, so the same test code also runs as a script.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_openagent.cache import EpisodeCache
from pytest_openagent.report import Record
from sandbox.agent import fingerprint
from sandbox.case import Case as SandboxCase
from sandbox.episode import Episode
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


class Runner:
    """Runs cases through a cache and hands one :class:`Record` per episode pair to ``record``."""

    def __init__(self, cache: EpisodeCache, record: Callable[[Record], None] | None = None) -> None:
        self.cache = cache
        self.record = record
        self.test = ""
        self.episodes_this_test: list[Record] = []

    def run(self, agent: Any, case: SandboxCase, max_steps: int | None = None) -> tuple[Episode, Episode]:
        if case.perturbations:
            episode, clean = self.cache.run(agent, [case, case.clean()], max_steps)
        else:
            episode = clean = self.cache.run(agent, [case], max_steps)[0]
        record = Record.of(self.test, fingerprint(agent), case, episode, clean)
        self.episodes_this_test.append(record)
        if self.record is not None:
            self.record(record)
        return episode, clean


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
