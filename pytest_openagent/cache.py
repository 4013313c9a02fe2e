"""The episode cache: content-addressed by agent fingerprint, case (with the sandbox version) and step limit.

Hypothesis demands determinism and reruns examples while it shrinks and replays; the cache makes
a rerun free and makes a sampling agent replay the same episode. Files are written to a temporary
name and renamed into place, so concurrent pytest-xdist workers never read half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import Case, run_cases
from sandbox.episode import DEFAULT_MAX_STEPS, Episode

# An agent_error usually means the server was down or the agent crashed: worth retrying next run.
_NOT_CACHED = frozenset({"agent_error"})


class EpisodeCache:
    """Episodes in memory and, when ``directory`` is given, on disk under it."""

    def __init__(self, directory: Path | str | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, Episode] = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(agent_fingerprint: str, case: Case, max_steps: int = DEFAULT_MAX_STEPS) -> str:
        blob = f"{agent_fingerprint}\0{case.key()}\0{max_steps}"
        return hashlib.sha256(blob.encode()).hexdigest()[:40]

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Episode | None:
        episode = self._memory.get(key)
        if episode is None and self.directory is not None:
            try:
                episode = Episode.model_validate_json(self._path(key).read_bytes())
            except (OSError, ValueError):
                episode = None
            if episode is not None:
                self._memory[key] = episode
        return episode

    def put(self, key: str, episode: Episode) -> None:
        if episode.outcome in _NOT_CACHED:
            return
        self._memory[key] = episode
        if self.directory is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(episode.model_dump_json().encode())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def run(self, agent: Any, cases: Sequence[Case], max_steps: int | None = None) -> list[Episode]:
        """One episode per case: cached ones read back, the others run and stored.

        ``max_steps=None`` gives each case its own step budget (``case.max_steps``); the misses run
        in one batch per budget, so an episode never depends on which cases shared its batch.
        """
        fp = fingerprint(agent)
        budgets = [_budget(c, max_steps) for c in cases]
        keys = [self.key(fp, c, b) for c, b in zip(cases, budgets, strict=True)]
        found = {k: e for k in dict.fromkeys(keys) if (e := self.get(k)) is not None}
        todo: dict[int, dict[str, Case]] = {}
        for key, case, budget in zip(keys, cases, budgets, strict=True):
            if key not in found:
                todo.setdefault(budget, {})[key] = case
        self.misses += sum(len(group) for group in todo.values())
        self.hits += len(keys) - sum(len(group) for group in todo.values())
        for budget, group in todo.items():
            for key, episode in zip(group, run_cases(agent, list(group.values()), budget), strict=True):
                self.put(key, episode)
                found[key] = episode
        return [found[k] for k in keys]


def _budget(case: Case, max_steps: int | None) -> int:
    return max_steps if max_steps is not None else getattr(case, "max_steps", DEFAULT_MAX_STEPS)


def prepare(directory: Path) -> Path:
    """Create the cache folder with a ``.gitignore`` so that nobody commits it by accident."""
    directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by pytest-openagent\n*\n")
    return directory
