"""Memory: a process's peak resident set, and what the machine has available for another."""

from __future__ import annotations

from pathlib import Path

from sandbox.evaluation.cost import peak_rss_bytes

__all__ = ["available_bytes", "peak_rss_bytes"]

MEMINFO = Path("/proc/meminfo")


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
