"""Keys and values kept between turns, and the cache layers that generation writes them through.

Keys are stored after rotary embedding, so moving them between buffers (to other columns) is exact as long
as each token keeps its position id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

Pieces = list[list[tuple["torch.Tensor", "torch.Tensor"]]]
"""Per layer, consecutive ``(keys, values)`` chunks, each ``[kv_heads, tokens, head_dim]``."""


@dataclass
class KVState:
    """What one conversation leaves behind: its token ids and their keys and values, layer by layer.

    The keys and values of its first tokens may be ``shared`` with other conversations (the system prompt
    and tool specs a batch of episodes has in common are kept once, not once per episode); ``kv`` holds
    the rest, this conversation's own."""

    tokens: list[int] = field(default_factory=list)
    kv: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    """Per layer ``(keys, values)`` of ``tokens[shared_len:]``, each ``[kv_heads, tokens, head_dim]``."""
    shared: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    """Per layer ``(keys, values)`` of ``tokens[:shared_len]``, held by other states too: never written."""

    @property
    def shared_len(self) -> int:
        return self.shared[0][0].shape[1] if self.shared else 0

    def pieces(self, start: int, end: int) -> Pieces:
        """Views of the keys and values of ``tokens[start:end]``: per layer, one or two chunks in order."""
        s = self.shared_len
        out: Pieces = [[] for _ in range(max(len(self.kv), len(self.shared)))]
        if start < min(end, s):
            for layer, (k, v) in enumerate(self.shared):
                out[layer].append((k[:, start : min(end, s)], v[:, start : min(end, s)]))
        if end > max(start, s):
            for layer, (k, v) in enumerate(self.kv):
                out[layer].append((k[:, max(start, s) - s : end - s], v[:, max(start, s) - s : end - s]))
        return out

    def prefix(self, n: int) -> KVState:
        """The first ``n`` tokens' state: its own keys and values copied, the shared ones still shared."""
        import torch

        n = min(n, len(self.tokens))
        s = self.shared_len
        if n >= s:
            own = [(k[:, : n - s].clone(), v[:, : n - s].clone()) for k, v in self.kv]
            return KVState(self.tokens[:n], own, self.shared)
        kv = [(torch.cat([k for k, _ in layer], 1), torch.cat([v for _, v in layer], 1)) for layer in self.pieces(0, n)]
        return KVState(self.tokens[:n], [(k.clone(), v.clone()) for k, v in kv])

    def nbytes(self) -> int:
        """Bytes of its own keys and values (not of those it shares)."""
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def copy_pieces(pieces: Pieces, kbuf: list, vbuf: list, row: int, column: int) -> int:
    """Write ``pieces`` into row ``row`` of the batch buffers from ``column`` on; returns the tokens written."""
    written = 0
    for layer, chunks in enumerate(pieces):
        at = column
        for k, v in chunks:
            kbuf[layer][row, :, at : at + k.shape[1]] = k
            vbuf[layer][row, :, at : at + k.shape[1]] = v
            at += k.shape[1]
        written = at - column
    return written


class BufferLayer:
    """A cache layer over a preallocated ``[batch, heads, capacity, dim]`` buffer (or a view of it):
    appending writes in place, where a growing cache would copy all its keys every step.

    With ``scatter = (rows, columns)``, one index per token of a packed batch-1 input, it writes each
    token's keys to its own row and column instead and returns the whole buffers (for
    :mod:`training.inference.prefix_attention`, which knows where each row's tokens are)."""

    is_sliding = False
    is_compileable = False
    is_initialized = True

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int, scatter: Any = None):
        self.keys_buf, self.values_buf, self.length, self.scatter = keys, values, length, scatter

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        if self.scatter is not None:
            rows, columns = self.scatter
            self.keys_buf[rows, :, columns] = key_states[0].transpose(0, 1)
            self.values_buf[rows, :, columns] = value_states[0].transpose(0, 1)
            return self.keys_buf, self.values_buf
        end = self.length + key_states.shape[-2]
        self.keys_buf[:, :, self.length : end] = key_states
        self.values_buf[:, :, self.length : end] = value_states
        self.length = end
        return self.keys_buf[:, :, :end], self.values_buf[:, :, :end]

    def get_seq_length(self) -> int:
        return self.length

    def get_mask_sizes(self, query_length: int, *args: Any) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_max_length(self) -> int:
        return -1


def buffer_cache(keys: list[torch.Tensor], values: list[torch.Tensor], length: int, scatter: Any = None):
    from transformers.cache_utils import Cache, CacheLayerMixin

    # Registered, not inherited: the mixin's __init__ would allocate state we do not use.
    CacheLayerMixin.register(BufferLayer)
    layers = [BufferLayer(k, v, length, scatter) for k, v in zip(keys, values, strict=True)]
    return Cache(layers=layers)  # type: ignore[arg-type]  # BufferLayer is a CacheLayerMixin by ABC.register, unseen
