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
    return path
