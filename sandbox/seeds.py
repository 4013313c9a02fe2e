"""Child seeds derived with crc32, never with ``hash()`` (salted per process)."""

from __future__ import annotations

import random
import zlib


def child_seed(seed: int, *parts: object) -> int:
    """A 32-bit seed derived from ``seed`` and ``parts``, stable across processes."""
    key = ":".join([str(seed), *map(str, parts)])
    return zlib.crc32(key.encode())


def rng(seed: int, *parts: object) -> random.Random:
    return random.Random(child_seed(seed, *parts))
