"""Memory: a process's peak resident set, and what the machine has available for another."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

MEMINFO = Path("/proc/meminfo")
RSS_UNIT = 1 if sys.platform == "darwin" else 1024
"""Bytes in a unit of ``ru_maxrss``: bytes on macOS, KiB on Linux."""


def peak_rss_bytes(children: bool = False) -> int:
    """This process's peak resident memory, or with ``children`` its largest finished child's."""
    return resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF).ru_maxrss * RSS_UNIT


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
