"""The episode cache: content-addressed by agent fingerprint, case (with the sandbox version) and step limit.

Hypothesis demands determinism and reruns examples while it shrinks and replays; the cache makes
a rerun free and makes a sampling agent replay the same episode.

On disk, each agent (by fingerprint) has a folder of append-only packs, one line per episode:
``<key>\\t<episode JSON>\\n``. Each process (each pytest-xdist worker) appends to a pack of its own,
created at its first write, and writes each episode as one line (appended to a file opened with
``O_APPEND``) the moment the episode ends, in every path that runs episodes (:meth:`EpisodeCache.run`):
a kill loses at most the episodes in flight, and nothing is ever written under a temporary name. A
reader takes every line it can use and skips the others (bad JSON, bytes that are not UTF-8, the
torn last line of a killed writer or of a pack still being written, an episode of another schema); a
skipped case runs again and its new line replaces the bad one, since of several lines for one key
the newest that reads wins.

An episode is stored or skipped, never fatal: one whose JSON exceeds :data:`MAX_EPISODE_BYTES`,
or that cannot be written at all (a full disk, a read-only folder), stays in memory for the
session and runs again next time; :attr:`EpisodeCache.skipped` counts them. ``.tmp-*`` files that
killed writers of earlier versions left behind are removed when a folder is first read.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sandbox.agent import fingerprint
from sandbox.budget import DEFAULT_MAX_STEPS
from sandbox.case import Case, run_cases
from sandbox.episode import Episode
from sandbox.errors import UsageError
from sandbox.redact import redact

DEFAULT_CACHE_DIR = Path(".openagent_cache")
"""Where the episode cache and Hypothesis' example database live unless told otherwise."""

MAX_EPISODE_BYTES = 1 << 20
"""The largest episode written to disk, as JSON (1 MiB; a typical one is a few kB). A larger one is
kept in memory only: a runaway agent must not fill the disk, nor make every read slow."""
STALE_TEMP_SECONDS = 600
"""Age after which a ``.tmp-*`` file in a cache folder (left by a killed writer) is removed."""

# An agent_error usually means the server was down or the agent crashed, a world_error that a tool server failed:
# worth retrying next run, never a verdict to serve again.
_NOT_CACHED = frozenset({"agent_error", "world_error"})
_KEY_LENGTH = 40
_pack_ids = itertools.count()


def _close_all(fds: dict[str, tuple[int, int]]) -> None:
    for pid, fd in fds.values():
        if pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(fd)
    fds.clear()


class EpisodeCache:
    """Episodes in memory and, when ``directory`` is given, on disk under it (see the module)."""

    def __init__(self, directory: Path | str | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, Episode] = {}
        self._stored: dict[str, bytes] = {}  # lines read from disk, not yet asked for: the newest per key
        self._older: dict[str, list[bytes]] = {}  # earlier lines of the same keys, oldest first
        self._loaded: set[str] = set()
        self._packs: dict[str, tuple[int, int]] = {}  # agent folder -> (pid, fd) of this process's pack
        self._finalizer = weakref.finalize(self, _close_all, self._packs)
        self.hits = 0
        self.misses = 0
        self.skipped = 0
        """Episodes not written to disk: too large, not serialisable, or the write failed."""
        self.corrupt = 0
        """Lines on disk that could not be read back (and whose cases ran again)."""

    @staticmethod
    def key(agent_fingerprint: str, case: Case, max_steps: int = DEFAULT_MAX_STEPS) -> str:
        blob = f"{agent_fingerprint}\0{case.key()}\0{max_steps}"
        return hashlib.sha256(blob.encode()).hexdigest()[:_KEY_LENGTH]

    def _folder(self, agent_fingerprint: str) -> Path:
        assert self.directory is not None
        return self.directory / hashlib.sha256(agent_fingerprint.encode()).hexdigest()[:16]

    def _load(self, agent_fingerprint: str) -> None:
        self._loaded.add(agent_fingerprint)
        folder = self._folder(agent_fingerprint)
        if folder.is_dir() and not os.access(folder, os.R_OK | os.X_OK):
            raise _unreadable(folder, "this user may not read it")
        try:
            packs = sorted(folder.glob("pack-*.jsonl")) if folder.is_dir() else []
        except OSError as exc:
            raise _unreadable(folder, exc.strerror or str(exc)) from None
        _remove_stale_temps(folder)
        stored, older = self._stored, self._older
        for pack in packs:  # names start with the creation time, so a later pack holds newer lines
            try:
                data = pack.read_bytes()
            except OSError as exc:  # every episode in it would run again, silently: misuse to say
                raise _unreadable(pack, exc.strerror or str(exc)) from None
            for line in data.split(b"\n"):
                key, tab, blob = line.partition(b"\t")
                if len(key) != _KEY_LENGTH or not tab or not key.isalnum():
                    self.corrupt += bool(line)
                    continue
                name = key.decode("ascii")  # isalnum() on bytes means ASCII letters and digits only
                previous = stored.get(name)
                if previous is not None:
                    older.setdefault(name, []).append(previous)
                stored[name] = blob

    def get(self, key: str, agent_fingerprint: str = "") -> Episode | None:
        episode = self._memory.get(key)
        if episode is not None or self.directory is None:
            return episode
        if agent_fingerprint not in self._loaded:
            self._load(agent_fingerprint)
        blob = self._stored.pop(key, None)
        while blob is not None:
            episode = _read(blob)
            if episode is not None:
                self._older.pop(key, None)
                self._memory[key] = episode
                return episode
            self.corrupt += 1
            earlier = self._older.get(key)
            blob = earlier.pop() if earlier else None
        return None

    def find(self, agent: Any, case: Case, max_steps: int | None = None) -> Episode | None:
        """The episode of ``agent`` on ``case`` if the cache holds it (the key :meth:`run` would use), else ``None``."""
        fp = fingerprint(agent)
        return self.get(self.key(fp, case, _budget(case, max_steps)), fp)

    def put(self, key: str, episode: Episode, agent_fingerprint: str = "") -> None:
        """Keep ``episode`` in memory and append it to this process's pack; never raises for a bad episode."""
        if episode.outcome in _NOT_CACHED:
            return
        self._memory[key] = episode
        if self.directory is None:
            return
        try:
            blob = redact(episode.model_dump_json()).encode()  # a key a reply or a tool echoed is not kept on disk
        except Exception:  # a value pydantic cannot write as JSON: keep it in memory only
            self.skipped += 1
            return
        if len(blob) > MAX_EPISODE_BYTES or not _reads_back(blob):
            self.skipped += 1  # stored, it would run again on every run, and be appended again
            return
        self._append(agent_fingerprint, b"%s\t%s\n" % (key.encode(), blob))

    def _append(self, agent_fingerprint: str, line: bytes) -> None:
        pack = self._packs.get(agent_fingerprint)
        if pack is None or pack[0] != os.getpid():  # none yet, or inherited through a fork: start one
            folder = self._folder(agent_fingerprint)
            name = f"pack-{time.time_ns():016x}-{os.getpid()}-{next(_pack_ids)}.jsonl"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except OSError:
                self.skipped += 1
                return
            pack = self._packs[agent_fingerprint] = (os.getpid(), fd)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(pack[1], view) :]
        except OSError:
            # Part of the line may be there: never append after it; the next episode starts a new pack.
            self.skipped += 1
            del self._packs[agent_fingerprint]
            with contextlib.suppress(OSError):
                os.close(pack[1])

    def forget(self) -> None:
        """Drop the episodes held in memory (those on disk stay, and are read back when asked for): a run that asks
        for each episode once (``check_domain``) keeps its memory flat."""
        self._memory.clear()

    def flush(self) -> None:
        """Nothing is left to write: each episode went to disk when it was stored. Kept for callers
        (the pytest session flushes after each test)."""

    def close(self) -> None:
        """Close this process's pack files; the cache still reads, and a later write opens a new pack."""
        _close_all(self._packs)

    def run(
        self,
        agent: Any,
        cases: Sequence[Case],
        max_steps: int | None = None,
        window: int | None = None,
        on_end: Callable[[Episode], None] | None = None,
    ) -> list[Episode]:
        """One episode per case: cached ones read back, the others run, each stored the moment it ends.

        ``max_steps=None`` gives each case its own step budget (``case.max_steps``), so an episode never
        depends on which cases shared its batch. The misses run together, at most ``window`` at a time
        (see :func:`~sandbox.episode.run_episodes`). ``on_end`` gets each distinct episode read back, then
        each one run as it ends.
        """
        fp = fingerprint(agent)
        budgets = [_budget(c, max_steps) for c in cases]
        keys = [self.key(fp, c, b) for c, b in zip(cases, budgets, strict=True)]
        stored = {k: e for k in dict.fromkeys(keys) if (e := self.get(k, fp)) is not None}
        found = {k: e.model_copy(update={"cached": True}) for k, e in stored.items()}
        todo: dict[str, tuple[Case, int]] = {}
        for key, case, budget in zip(keys, cases, budgets, strict=True):
            if key not in found:
                todo.setdefault(key, (case, budget))
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        if on_end is not None:
            for key in found:
                on_end(found[key])
        if todo:
            order = list(todo)

            def store(i: int, episode: Episode) -> None:  # as each episode ends: a kill loses only those in flight
                self.put(order[i], episode, fp)
                found[order[i]] = episode
                if on_end is not None:
                    on_end(episode)

            run_cases(agent, [c for c, _ in todo.values()], [b for _, b in todo.values()], window, store)
        return [found[k] for k in keys]


def _unreadable(path: Path, why: str) -> UsageError:
    return UsageError(
        f"the episode cache cannot read {path}: {why}; every episode it holds would run again. Fix its permissions "
        "(it belongs to the user who ran the episodes), give the cache another folder, or turn it off"
    )


def _read(blob: bytes) -> Episode | None:
    try:
        return Episode.model_validate_json(blob)
    except Exception:  # bad JSON, not UTF-8, torn, another schema: the case runs again
        return None


_READER_DEPTH = 200
"""Nesting that pydantic's JSON reader takes at most; a deeper episode would be written and never read back."""


def _reads_back(blob: bytes) -> bool:
    """Whether ``blob`` reads back as an episode. Its nesting is at most its count of brackets, so one with fewer
    brackets than the reader takes (every episode seen so far) needs no reading; the others are read to see."""
    if blob.count(b"[") + blob.count(b"{") < _READER_DEPTH:
        return True
    return _read(blob) is not None


def _remove_stale_temps(folder: Path) -> None:
    cutoff = time.time() - STALE_TEMP_SECONDS
    with contextlib.suppress(OSError):
        for tmp in folder.glob(".tmp-*"):
            with contextlib.suppress(OSError):
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()


def _budget(case: Case, max_steps: int | None) -> int:
    return max_steps if max_steps is not None else getattr(case, "max_steps", DEFAULT_MAX_STEPS)


EPISODES = "episodes"
"""The episode cache's folder inside a cache folder (beside Hypothesis' example database)."""


def check_folder(directory: Path) -> None:
    """Raise :class:`~sandbox.errors.UsageError` unless ``directory`` and its :data:`EPISODES` folder are
    folders this process can write, or can be made so; creates nothing. An unusable cache is misuse to
    report before a run, never a cache that silently keeps nothing."""
    for folder in (directory, directory / EPISODES):
        path = folder
        while not path.exists() and path.parent != path:
            path = path.parent
        if not path.is_dir():
            raise UsageError(f"the cache folder {directory} cannot be used: {path} is a file, not a folder; "
                             "give the cache another folder, or turn it off")  # fmt: skip
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"the cache folder {directory} cannot be used: {path} is not writable by this user; "
                             "give the cache another folder, or turn it off")  # fmt: skip


def prepare(directory: Path) -> Path:
    """Create the cache folder (checked by :func:`check_folder`) with a ``.gitignore`` so that nobody commits it
    by accident."""
    check_folder(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        ignore = directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by pytest-openagent\n*\n")
    except OSError as exc:
        raise UsageError(f"the cache folder {directory} cannot be used: {exc}; give the cache another folder, "
                         "or turn it off") from None  # fmt: skip
    return directory
