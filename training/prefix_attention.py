"""Decoding attention that reads a prefix shared by every row once, not once per row.

The episodes of a batch share a long prefix (the system prompt and the tool specs, a thousand
tokens or more), and on a CPU decoding a batch spends most of its time reading keys and values.
So while decoding, the shared prefix's keys and values are kept once (``[kv_heads, P, dim]``),
each row's own tokens in the batch cache, and each layer computes attention over the two parts
separately and merges them with their log-sum-exp (as flash attention merges blocks). The result is
the same attention, up to float rounding.

It runs as a registered attention implementation that falls back to plain SDPA outside
:func:`shared_prefix`, and is switched on only around a decoding loop.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

NAME = "openagent_prefix_sdpa"
_prefix: contextvars.ContextVar[list | None] = contextvars.ContextVar("openagent_prefix", default=None)
_registered = False


def _register() -> None:
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, _attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    _registered = True


def supported(model: Any) -> bool:
    return getattr(model.config, "_attn_implementation", None) == "sdpa"


@contextlib.contextmanager
def shared_prefix(model: Any, kv: list) -> Iterator[None]:
    """Within this block, the model's attention treats ``kv`` (per layer ``(keys, values)``, each
    ``[kv_heads, P, dim]``) as a prefix before every row's keys and values."""
    _register()
    token = _prefix.set(kv)
    model.config._attn_implementation = NAME
    try:
        yield
    finally:
        model.config._attn_implementation = "sdpa"
        _prefix.reset(token)


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    prefix = _prefix.get()
    if prefix is None or query.shape[2] != 1:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    pk, pv = prefix[module.layer_idx]  # [kv_heads, P, dim]
    batch, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    rep = heads // kv_heads
    scale = scaling if scaling is not None else dim**-0.5
    q = query.reshape(batch, kv_heads, rep, dim).float() * scale  # one query token per row

    # The prefix: all rows' queries against one copy of its keys.
    qp = q.permute(1, 0, 2, 3).reshape(kv_heads, batch * rep, dim)
    sp = torch.matmul(qp, pk.float().transpose(1, 2))  # [kv_heads, batch*rep, P]
    mp = sp.amax(-1, keepdim=True)
    ep = torch.exp(sp - mp)
    lp = ep.sum(-1, keepdim=True)
    op = torch.matmul(ep, pv.float())  # [kv_heads, batch*rep, dim]
    mp, lp, op = (t.reshape(kv_heads, batch, rep, -1).permute(1, 0, 2, 3) for t in (mp, lp, op))

    # Each row's own tokens, masked (padding, finished rows).
    sr = torch.matmul(q, key.float().transpose(2, 3))  # [batch, kv_heads, rep, S]
    if attention_mask is not None:
        allowed = attention_mask[:, :, -1:, :] if attention_mask.dtype == torch.bool else attention_mask[:, :, -1:] > -1
        sr = sr.masked_fill(~allowed, float("-inf"))
    mr = sr.amax(-1, keepdim=True)
    m = torch.maximum(mp, mr)
    er = torch.exp(sr - m)
    scale_p = torch.exp(mp - m)
    out = (op * scale_p + torch.matmul(er, value.float())) / (lp * scale_p + er.sum(-1, keepdim=True))
    # Back to the layout SDPA returns: [batch, 1, heads, dim].
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).to(query.dtype), None
