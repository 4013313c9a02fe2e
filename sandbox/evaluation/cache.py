"""The episode cache: content-addressed by agent fingerprint, case (with the sandbox version) and step limit.

Hypothesis demands determinism and reruns examples while it shrinks and replays; the cache makes
a rerun free and makes a sampling agent replay the same episode. Files are written to a temporary
name and renamed into place, so concurrent pytest-xdist workers never read half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import Case, run_cases
from sandbox.episode import DEFAULT_MAX_STEPS, Episode

DEFAULT_CACHE_DIR = Path(".openagent_cache")
"""Where the episode cache and Hypothesis' example database live unless told otherwise."""

# An agent_error usually means the server was down or the agent crashed: worth retrying next run.
_NOT_CACHED = frozenset({"agent_error"})
FLUSH_EVERY = 256
"""Episodes held in memory at most before they are written, so a crash loses little."""


class EpisodeCache:
    """Episodes in memory and, when ``directory`` is given, on disk under it.

    On disk, each agent (by fingerprint) has a folder of pack files, one JSON line per episode.
    New episodes are held until :meth:`flush` writes them as one new pack: creating a file costs
    more than a millisecond on many file systems, an episode of the oracle less. A pack is written
    under a temporary name and renamed into place, and its name is unique to the process, so
    pytest-xdist workers never write the same file. An agent's packs are read when first needed.
    """

    def __init__(self, directory: Path | str | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, Episode] = {}
        self._stored: dict[str, bytes] = {}
        self._loaded: set[str] = set()
        self._pending: dict[str, list[tuple[str, Episode]]] = {}
        self._packs = 0
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(agent_fingerprint: str, case: Case, max_steps: int = DEFAULT_MAX_STEPS) -> str:
        blob = f"{agent_fingerprint}\0{case.key()}\0{max_steps}"
        return hashlib.sha256(blob.encode()).hexdigest()[:40]

    def _folder(self, agent_fingerprint: str) -> Path:
        assert self.directory is not None
        return self.directory / hashlib.sha256(agent_fingerprint.encode()).hexdigest()[:16]

    def _load(self, agent_fingerprint: str) -> None:
        self._loaded.add(agent_fingerprint)
        folder = self._folder(agent_fingerprint)
        for pack in sorted(folder.glob("pack-*.jsonl")) if folder.is_dir() else []:
            try:
                lines = pack.read_bytes().splitlines()
            except OSError:
                continue
            for line in lines:
                key, _, blob = line.partition(b"\t")
                self._stored.setdefault(key.decode(), blob)

    def get(self, key: str, agent_fingerprint: str = "") -> Episode | None:
        episode = self._memory.get(key)
        if episode is not None or self.directory is None:
            return episode
        if agent_fingerprint not in self._loaded:
            self._load(agent_fingerprint)
        blob = self._stored.pop(key, None)
        if blob is None:
            return None
        try:
            episode = self._memory[key] = Episode.model_validate_json(blob)
        except ValueError:
            return None
        return episode

    def put(self, key: str, episode: Episode, agent_fingerprint: str = "") -> None:
        if episode.outcome in _NOT_CACHED:
            return
        self._memory[key] = episode
        if self.directory is not None:
            self._pending.setdefault(agent_fingerprint, []).append((key, episode))

    def flush(self) -> None:
        """Write the episodes stored since the last flush, one pack per agent."""
        pending, self._pending = self._pending, {}
        for agent_fingerprint, items in pending.items():
            folder = self._folder(agent_fingerprint)
            folder.mkdir(parents=True, exist_ok=True)
            self._packs += 1
            name = f"pack-{time.time_ns():x}-{os.getpid()}-{self._packs}.jsonl"
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".jsonl")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.writelines(f"{key}\t".encode() + ep.model_dump_json().encode() + b"\n" for key, ep in items)
                os.replace(tmp, folder / name)
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
        found = {k: e for k in dict.fromkeys(keys) if (e := self.get(k, fp)) is not None}
        todo: dict[int, dict[str, Case]] = {}
        for key, case, budget in zip(keys, cases, budgets, strict=True):
            if key not in found:
                todo.setdefault(budget, {})[key] = case
        self.misses += sum(len(group) for group in todo.values())
        self.hits += len(keys) - sum(len(group) for group in todo.values())
        for budget, group in todo.items():
            for key, episode in zip(group, run_cases(agent, list(group.values()), budget), strict=True):
                self.put(key, episode, fp)
                found[key] = episode
        if sum(map(len, self._pending.values())) >= FLUSH_EVERY:
            self.flush()
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
