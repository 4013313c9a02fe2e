"""How each next token is picked: greedy, or sampled (temperature, top-k, top-p) from a generator per row."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Sampling:
    """How to pick each token. ``temperature == 0`` is greedy decoding."""

    max_new_tokens: int = 256
    """Longest reply, in tokens; a reply cut here has ``finish_reason == "length"``."""
    temperature: float = 0.0
    """0 for greedy; above 0, sample from ``softmax(logits / temperature)``."""
    top_k: int = 0
    """Sample among the k likeliest tokens only (0: all)."""
    top_p: float = 1.0
    """Sample among the likeliest tokens whose probabilities add up to p (1.0: all)."""
    seed: int = 0
    """Sampling seed; each row draws from its own generator, seeded by ``(seed, row key)``."""


def row_seed(seed: int, key: str) -> int:
    return zlib.crc32(f"{seed}:{key}".encode())


def pick(logits: Any, sampling: Sampling, generators: Sequence[Any] | None) -> tuple[Any, Any]:
    """The next token of each row and its log-probability."""
    import torch

    if sampling.temperature <= 0:
        logprobs = torch.log_softmax(logits, dim=-1)
        picked = logits.argmax(dim=-1)
        return picked, logprobs.gather(1, picked.unsqueeze(1)).squeeze(1)
    logprobs = torch.log_softmax(logits / sampling.temperature, dim=-1)
    filtered = logprobs.clone()
    if sampling.top_k > 0:
        kth = filtered.topk(min(sampling.top_k, filtered.shape[-1]), dim=-1).values[:, -1:]
        filtered[filtered < kth] = float("-inf")
    if sampling.top_p < 1.0:
        sorted_lp, order = filtered.sort(dim=-1, descending=True)
        cumulative = sorted_lp.exp().cumsum(dim=-1)
        drop = cumulative - sorted_lp.exp() > sampling.top_p  # keep the token that crosses p
        sorted_lp[drop] = float("-inf")
        filtered = torch.full_like(filtered, float("-inf")).scatter(1, order, sorted_lp)
    probs = torch.softmax(filtered, dim=-1)
    assert generators is not None  # a draw (temperature above 0) takes each row's generator
    picked = torch.stack([torch.multinomial(probs[r], 1, generator=g)[0] for r, g in enumerate(generators)])
    return picked, logprobs.gather(1, picked.unsqueeze(1)).squeeze(1)
