"""The batched runner: cases and their clean twins through the episode cache, one record per case.

A :class:`Runner` is a :class:`sandbox.case.CaseRunner`: installed (``with runner.installed():``,
or :func:`sandbox.case.install_runner` as the pytest session does), it serves every ``Case.run``.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import Case, install_runner
from sandbox.episode import START_FAILED, Episode
from sandbox.errors import OpenAgentError
from sandbox.evaluation.cache import EpisodeCache
from sandbox.evaluation.report import Record
from sandbox.live_episode import HARNESS

MIN_EPISODES = 8
"""Episodes seen before :class:`Health` may call the agent broken."""


class AgentFailure(OpenAgentError):
    """Most episodes ended as ``agent_error`` of one cause (a dead server, a bad key): not a measurement."""


class WorldFailed(OpenAgentError):
    """Episodes ended as ``world_error`` (a tool server exited, hung or lost its transport): no measurement of the
    agent. Those episodes are not cached; run again once the server is fixed."""


def world_message(episodes: int, causes: Counter[str]) -> str:
    cause, count = causes.most_common(1)[0]
    total = sum(causes.values())
    return (
        f"{total} of {episodes} episodes ended as world_error, not the agent's doing ({count} with the same "
        f"cause): {cause}; they count in no rate and are not cached: fix the server and run again"
    )


class Health:
    """Counts episodes and the causes of their ``agent_error`` endings, to tell a broken agent from a weak one,
    and of their ``world_error`` endings (:class:`WorldFailed`)."""

    def __init__(self) -> None:
        self.episodes = 0
        self.causes: Counter[str] = Counter()
        self.world: Counter[str] = Counter()

    def add(self, episodes: Iterable[Episode]) -> None:
        for episode in episodes:
            self.episodes += 1
            if episode.outcome in ("agent_error", "world_error"):
                errors = [s.error for s in episode.steps if s.error]
                causes = self.causes if episode.outcome == "agent_error" else self.world
                causes[(errors[-1] if errors else "no reply")[:300]] += 1

    def world_failure(self) -> str | None:
        """Why the measurement is not the agent's, else ``None``: some episodes ended as ``world_error``."""
        return world_message(self.episodes, self.world) if self.world else None

    def failure(self, whole_run: bool = False) -> str | None:
        """Why the agent looks broken, else ``None``: most episodes ended as ``agent_error`` of one cause, once
        ``MIN_EPISODES`` have run; or, for a ``whole_run`` (every episode of a measurement so far, not a test's
        few), every episode did, however few."""
        if not self.causes:
            return None
        cause, count = self.causes.most_common(1)[0]
        unanimous = whole_run and count == self.episodes
        if not unanimous and (self.episodes < MIN_EPISODES or 2 * count <= self.episodes):
            return None
        failed = sum(self.causes.values())
        if cause.startswith(HARNESS):
            return (
                f"{failed} of {self.episodes} episodes could not be run ({count} with the same cause): {cause}; "
                f"the agent is not at fault: raise this machine's limit (ulimit -n for descriptors) or run fewer "
                f"episodes at once (--batch-size), and run again"
            )
        fix = (
            "the domain (or the perturbation)"
            if cause.startswith(START_FAILED)
            else "the agent (or its server, URL or key)"
        )
        return (
            f"the agent failed on {failed} of {self.episodes} episodes ({count} with the same cause): {cause}; "
            f"fix {fix} and run again"
        )


class EpisodeBudgetSpent(OpenAgentError):
    """A case would run more new episodes than the test's budget (:meth:`Runner.run`'s ``budget``) has left."""


class Runner:
    """Runs cases through a cache and hands one :class:`Record` per case (with its clean twin) to ``record``."""

    def __init__(
        self, cache: EpisodeCache, record: Callable[[Record], None] | None = None, max_steps: int | None = None
    ) -> None:
        self.cache = cache
        self.record = record
        self.max_steps = max_steps
        """The step limit of every episode it runs where a call names none (``None``: each case's own)."""
        self.test = ""
        self.episodes_this_test: list[Record] = []
        self.new_this_test = 0
        """Episodes run (not read back from the cache) since :meth:`begin`."""
        self.budget_spent = False
        """Whether a case was refused since :meth:`begin` for want of budget (:class:`EpisodeBudgetSpent`)."""
        self._ran_this_test: set[tuple[str, str]] = set()
        self.last: Episode | None = None
        """The perturbed episode of the last case :meth:`run` ran (what a failed test ended on)."""
        self.health = Health()
        self.cache_hits: dict[str, set[str]] = {"cases": set(), "twins": set()}
        self._twins_run: set[str] = set()

    def begin(self, test: str) -> None:
        """Start counting for ``test``: its records, the new episodes it ran, the last case it ran."""
        self.test = test
        self.episodes_this_test = []
        self.new_this_test = 0
        self.budget_spent = False
        self._ran_this_test = set()
        self.last = None

    def cached(self, agent: Any, case: Case, max_steps: int | None = None) -> Episode | None:
        """The episode :meth:`run` would read back for ``case`` (not its twin) from the cache, else ``None``."""
        return self.cache.find(agent, case, self.max_steps if max_steps is None else max_steps)

    def run(
        self, agent: Any, case: Case, max_steps: int | None = None, budget: int | None = None
    ) -> tuple[Episode, Episode]:
        """One case: its episode and its clean twin's, run in one batch. With a ``budget``, raises
        :class:`EpisodeBudgetSpent` instead of running more than ``budget`` new episodes since :meth:`begin`
        (episodes the cache holds cost nothing, nor do those it would not keep, run again: Hypothesis replays
        the failure it ends on)."""
        cases = [case, case.clean()] if case.perturbations else [case]
        if budget is not None:  # only a budgeted test pays for the agent's key and the cache lookups here
            ran = {(fingerprint(agent), c.key()) for c in cases}
            new = 0 if ran <= self._ran_this_test else sum(self.cached(agent, c, max_steps) is None for c in cases)
            if new and self.new_this_test + new > budget:
                self.budget_spent = True
                raise EpisodeBudgetSpent(f"{self.new_this_test} new episodes run of a budget of {budget}")
            self._ran_this_test |= ran
        max_steps = self.max_steps if max_steps is None else max_steps
        episodes = self.cache.run(agent, cases, max_steps)
        self.new_this_test += sum(not e.cached for e in {id(e): e for e in episodes}.values())
        self.health.add(episodes)
        episode, clean = episodes[0], episodes[-1]
        broken = [e for e in (episode, clean) if e.outcome == "world_error"]
        if broken:  # a test must not pass or fail on what the world did
            counted: Counter[str] = Counter([next((s.error for s in reversed(broken[0].steps) if s.error), "")])
            raise WorldFailed(world_message(len({id(episode), id(clean)}), counted))
        self.last = episode
        self._keep(Record.of(self.test, fingerprint(agent), case, episode, clean))
        return episode, clean

    def run_batches(
        self,
        agent: Any,
        cases: Sequence[Case],
        batch_size: int = 64,
        max_steps: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Record]:
        """Many cases and their clean twins, ``batch_size`` cases (and their twins) at a time: a model agent
        generates for them at once, and as an episode ends the next starts in its place. The first batch runs
        alone, so that an agent that looks broken raises :class:`AgentFailure` before the rest runs.
        ``progress(done, total)`` counts the episodes as each ends or is read back from the cache."""
        fp = fingerprint(agent)
        max_steps = self.max_steps if max_steps is None else max_steps
        records: list[Record] = []
        parts = [(part, [c.clean() for c in part]) for part in (cases[:batch_size], cases[batch_size:]) if part]
        on_end = (
            None if progress is None else _counter(progress, sum(len({c.key() for c in [*p, *t]}) for p, t in parts))
        )
        for part, twins in parts:
            episodes = self.cache.run(agent, [*part, *twins], max_steps, window=2 * batch_size, on_end=on_end)
            self.health.add(episodes)
            for case, episode, clean in zip(part, episodes[: len(part)], episodes[len(part) :], strict=True):
                records.append(record := Record.of(self.test, fp, case, episode, clean))
                self._keep(record)
                self._count_hits(record, episode.cached, clean.cached)
            failure = self.health.failure(whole_run=True)
            if failure is not None:
                raise AgentFailure(failure)
            world = self.health.world_failure()
            if world is not None:
                raise WorldFailed(world)
        return records

    def _count_hits(self, record: Record, cached: bool, clean_cached: bool) -> None:
        """Which episodes the cache gave back (a task's twin: only while no case of this run ran it)."""
        if cached:
            self.cache_hits["cases"].add(record.case)
        if clean_cached and record.task not in self._twins_run:
            self.cache_hits["twins"].add(record.task)
        elif not clean_cached:
            self._twins_run.add(record.task)
            self.cache_hits["twins"].discard(record.task)

    @contextmanager
    def installed(self) -> Iterator[Runner]:
        """``with runner.installed(): case.run(agent)``: every ``Case.run`` inside goes through this runner."""
        previous = install_runner(self)
        try:
            yield self
        finally:
            install_runner(previous)

    def _keep(self, record: Record) -> None:
        self.episodes_this_test.append(record)
        if self.record is not None:
            self.record(record)


def _counter(progress: Callable[[int, int], None], total: int) -> Callable[[Episode], None]:
    """An ``on_end`` that calls ``progress(done, total)``; a threaded agent's episodes end on several threads."""
    done = itertools.count(1)
    lock = threading.Lock()

    def on_end(_episode: Episode) -> None:
        with lock:
            progress(next(done), total)

    return on_end


def run_in_batches(
    agent: Any,
    cases: Sequence[Case],
    batch_size: int = 64,
    cache: EpisodeCache | None = None,
    max_steps: int | None = None,
) -> list[Episode]:
    """The episodes of ``cases``, in order, at most ``batch_size`` at a time (as one ends the next starts)
    through ``cache`` (a memory-only one if ``None``): the one loop for every caller that has more cases
    than a batch."""
    cache = cache if cache is not None else EpisodeCache(None)
    return cache.run(agent, cases, max_steps, window=batch_size)
