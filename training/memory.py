"""Memory: a process's peak resident set, and what the machine has available for another."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


def peak_rss_bytes(children: bool = False) -> int:
    """This process's peak resident memory, or with ``children`` its largest finished child's."""
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, kB on Linux
    return resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF).ru_maxrss * scale


def available_bytes() -> int | None:
    """The memory the kernel can give new work without swapping (``MemAvailable``), or ``None`` where it does not
    say (no ``/proc/meminfo``)."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
