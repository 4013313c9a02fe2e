"""Files written atomically: a reader (or a process killed mid-write) never leaves or sees half a file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from sandbox.errors import UsageError


def write_atomically(path: Path, text: str | bytes) -> None:
    """Write to a temporary file beside ``path``, then rename it into place.

    The file gets the mode any new file gets (0666 less the umask), as ``open(path, "w")`` gives it: a report
    is read by others (a CI artifact uploader), which ``tempfile.mkstemp``'s private 0600 would keep out.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"no free temporary name beside {path}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_output_file(path: Path, what: str = "the report") -> Path:
    """``path`` if a file can be written there, checked before the work whose result it will hold; else a
    :class:`~sandbox.errors.UsageError` that says why (a folder, an unwritable place)."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(
            f"{str(path)!r} is a folder; give the file to write {what} to, e.g. {str(path / 'report.json')!r}"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{str(path)!r} is not writable; give another file for {what}")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} to {str(path)!r}: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {what} to {str(path)!r}: the folder {str(parent)!r} is not writable")
    _probe(path, parent, what)
    return path


def check_output_folder(path: Path, what: str) -> Path:
    """``path`` if a folder can be made there (or is one) and written to, checked before the work that fills it; else
    a :class:`~sandbox.errors.UsageError` that says why (a file there, an unwritable place)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{str(path)!r} is a file; give a folder for {what} (it is made if missing)")
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"cannot make {what} at {str(path)!r}: {str(parent)!r} is a file, not a folder")
    _probe(path / "x", parent, what)
    return path


_TEMP_SUFFIX = 16
"""What :func:`write_atomically` adds to a name for its temporary file (``.NAME.xxxxxxxx.tmp``)."""


def _probe(path: Path, existing: Path, what: str) -> None:
    """Whether a file can be created in ``existing`` (the nearest folder of ``path`` there is) and ``path``'s names
    fit the file system: a temporary file made and removed, nothing left behind."""
    try:
        limit = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    for part in path.relative_to(existing).parts if path.is_relative_to(existing) else (path.name,):
        if len(os.fsencode(part)) + _TEMP_SUFFIX > limit:
            raise UsageError(f"cannot write {what} to {str(path)!r}: the name {part[:40]!r}... is longer than the "
                             f"file system takes ({limit} bytes); give a shorter name")  # fmt: skip
    probe = existing / f".openagent-probe-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise UsageError(f"cannot write {what} to {str(path)!r}: {exc.strerror} in {str(existing)!r}") from None
    os.close(fd)
    probe.unlink(missing_ok=True)
