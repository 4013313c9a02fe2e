"""The batched runner: cases and their clean twins through the episode cache, one record per case."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import Case
from sandbox.episode import Episode
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.report import Record


class Runner:
    """Runs cases through a cache and hands one :class:`Record` per case (with its clean twin) to ``record``."""

    def __init__(self, cache: EpisodeCache, record: Callable[[Record], None] | None = None) -> None:
        self.cache = cache
        self.record = record
        self.test = ""
        self.episodes_this_test: list[Record] = []

    def run(self, agent: Any, case: Case, max_steps: int | None = None) -> tuple[Episode, Episode]:
        """One case: its episode and its clean twin's, run in one batch."""
        if case.perturbations:
            episode, clean = self.cache.run(agent, [case, case.clean()], max_steps)
        else:
            episode = clean = self.cache.run(agent, [case], max_steps)[0]
        self._keep(Record.of(self.test, fingerprint(agent), case, episode, clean))
        return episode, clean

    def run_batch(self, agent: Any, cases: Sequence[Case], max_steps: int | None = None) -> list[Record]:
        """Many cases and their clean twins in one batch (a model agent generates for all at once)."""
        twins = [c.clean() for c in cases]
        episodes = self.cache.run(agent, [*cases, *twins], max_steps)
        fp = fingerprint(agent)
        records = [
            Record.of(self.test, fp, case, episode, clean)
            for case, episode, clean in zip(cases, episodes[: len(cases)], episodes[len(cases) :], strict=True)
        ]
        for record in records:
            self._keep(record)
        return records

    def _keep(self, record: Record) -> None:
        self.episodes_this_test.append(record)
        if self.record is not None:
            self.record(record)
