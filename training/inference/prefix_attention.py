"""Attention for batched generation: a prefix shared by every row read once, and a packed prefill.

The episodes of a batch share a long prefix (the system prompt and the tool specs, several hundred
tokens), and on a CPU decoding a batch spends much of its time reading keys and values. So the shared
prefix's keys and values are kept once (``[kv_heads, P, dim]``), each row's own tokens in the batch
cache, and each layer computes attention over the two parts separately and merges them with their
log-sum-exp (as flash attention merges blocks). The result is the same attention, up to float rounding.

Prefill (and the SFT loss, ``training.sft.batch_loss``) runs every row's new tokens in one forward pass,
packed end to end into a single sequence (no padding, so the linear layers do no wasted work); the cache
scatters each token's keys into its row of the batch buffers, and attention here runs row by row: a row's
new tokens attend to the shared prefix, to the row's earlier tokens and causally to each other.

It runs as a registered attention implementation that falls back to plain SDPA outside
:func:`shared_prefix` and :func:`packed`, and is switched on only around the forward passes that need it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

NAME = "openagent_prefix_sdpa"
CPU_KERNEL = True
"""Use SDPA's CPU kernel (a private op, where this torch has it) for each block; else plain matmuls."""


@dataclass
class Segment:
    """One row's new tokens in a packed prefill: ``count`` tokens from ``first`` in the packed sequence,
    whose keys go to columns ``end - count`` to ``end`` of batch row ``row``; the row's tokens start at
    column ``start``. ``mask`` is filled in by :func:`packed`: additive, ``[rep * count, end - start]`` for
    ``rep`` query heads a kv head, causal over the row's tokens; with gradients (training) boolean,
    ``[count, P + end - start]``, over the prefix's keys too."""

    row: int
    first: int
    count: int
    start: int
    end: int
    mask: Any = None


@dataclass
class _Context:
    prefix: list | None
    segments: Sequence[Segment] | None = None
    training: bool = False


_context: contextvars.ContextVar[_Context | None] = contextvars.ContextVar("openagent_prefix", default=None)
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
def _use(model: Any, context: _Context) -> Iterator[None]:
    _register()
    token = _context.set(context)
    model.config._attn_implementation = NAME
    try:
        yield
    finally:
        model.config._attn_implementation = "sdpa"
        _context.reset(token)


def shared_prefix(model: Any, kv: list) -> contextlib.AbstractContextManager[None]:
    """Within this block, the model's attention treats ``kv`` (per layer ``(keys, values)``, each
    ``[kv_heads, P, dim]``) as a prefix before every row's keys and values (one query token a row)."""
    return _use(model, _Context(kv))


def packed(model: Any, prefix: list | None, segments: Sequence[Segment]) -> contextlib.AbstractContextManager[None]:
    """Within this block, a forward pass of one packed sequence (batch 1) is a prefill of the rows that
    ``segments`` describe, each also attending to ``prefix`` (as in :func:`shared_prefix`) when given.
    In generation the cache returns the whole batch buffers (``BufferLayer`` with ``scatter``); in
    training there is no cache, and each segment is row 0 of the packed sequence's own keys."""
    import torch

    config = model.config.get_text_config(decoder=True)
    rep = config.num_attention_heads // (getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
    device = next(model.parameters()).device
    p = prefix[0][0].shape[1] if prefix else 0
    training = torch.is_grad_enabled()
    for s in segments:
        own = s.end - s.start  # the row's earlier tokens, then its new ones
        causal = torch.ones(s.count, own, dtype=torch.bool, device=device).tril(own - s.count)
        if training:  # a boolean mask over the prefix's keys and the row's, for one SDPA call
            s.mask = torch.cat([torch.ones(s.count, p, dtype=torch.bool, device=device), causal], dim=1)
        else:
            s.mask = torch.zeros(s.count, own, device=device).masked_fill(~causal, float("-inf")).repeat(rep, 1)
    return _use(model, _Context(prefix, segments, training))


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    context = _context.get()
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    if context is not None and context.segments is not None:
        packed_attention = _packed_training_attention if context.training else _packed_attention
        return packed_attention(context, module, query, key, value, scale)
    if context is None or query.shape[2] != 1:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    return _decode_attention(context, module, query, key, value, attention_mask, scale)


def _partial(query, key, value, mask, scale):
    """Attention of ``query`` ``[..., L, dim]`` over one block of keys, in float32, and each query's
    log-sum-exp of scores, for :func:`_merge`. ``mask`` is additive (0 or -inf), of the query's dtype."""
    import torch

    if (
        CPU_KERNEL
        and query.device.type == "cpu"
        and not (torch.is_grad_enabled() and query.requires_grad)  # the kernel's log-sum-exp has no gradient
        and hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu")
    ):
        # SDPA's CPU kernel, which also returns the log-sum-exp: it reads the keys block by block, where
        # the matmuls below write and read back every score.
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, attn_mask=mask, scale=scale
        )
        return out.float(), lse.float()
    scores = torch.matmul(query.float() * scale, key.float().transpose(-1, -2))
    if mask is not None:
        scores = scores + mask
    lse = torch.logsumexp(scores, dim=-1)
    return torch.matmul(torch.exp(scores - lse.unsqueeze(-1)), value.float()), lse


def _merge(out_a, lse_a, out_b, lse_b):
    """Attention over two blocks of keys from each block's (as flash attention merges blocks)."""
    import torch

    lse = torch.logaddexp(lse_a, lse_b)
    return out_a * torch.exp(lse_a - lse).unsqueeze(-1) + out_b * torch.exp(lse_b - lse).unsqueeze(-1)


def _decode_attention(context, module, query, key, value, attention_mask, scale):
    import torch

    pk, pv = context.prefix[module.layer_idx]  # [kv_heads, P, dim]
    batch, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    rep = heads // kv_heads
    # One query token a row: the heads that share a kv head become that head's queries.
    q = query.reshape(batch, kv_heads, rep, dim)

    # The prefix: all rows' queries against one copy of its keys.
    qp = q.transpose(0, 1).reshape(1, kv_heads, batch * rep, dim)
    op, lp = _partial(qp, pk.unsqueeze(0), pv.unsqueeze(0), None, scale)
    op, lp = op[0].view(kv_heads, batch, rep, dim).transpose(0, 1), lp[0].view(kv_heads, batch, rep).transpose(0, 1)

    # Each row's own tokens, masked (padding, finished rows).
    mask = None
    if attention_mask is not None:
        allowed = attention_mask[:, :, -1:, :] if attention_mask.dtype == torch.bool else attention_mask[:, :, -1:] > -1
        mask = torch.zeros(allowed.shape, dtype=query.dtype, device=query.device).masked_fill(~allowed, float("-inf"))
    orow, lrow = _partial(q, key, value, mask, scale)
    out = _merge(op, lp, orow, lrow)
    # Back to the layout SDPA returns: [batch, 1, heads, dim].
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).to(query.dtype), None


def _packed_attention(context, module, query, key, value, scale):
    """``query`` is ``[1, heads, T, dim]`` (every row's new tokens end to end), ``key`` and ``value`` the
    whole batch buffers ``[batch, kv_heads, capacity, dim]``, the new tokens' keys already in place."""
    _, heads, total, dim = query.shape
    kv_heads = key.shape[1]
    rep = heads // kv_heads
    prefix = context.prefix[module.layer_idx] if context.prefix else None
    out = query.new_empty(total, heads, dim)
    for s in context.segments:
        q = query[0, :, s.first : s.first + s.count].reshape(1, kv_heads, rep * s.count, dim)
        k, v = key[s.row : s.row + 1, :, s.start : s.end], value[s.row : s.row + 1, :, s.start : s.end]
        # A query always sees its own key, so no row of scores is all -inf.
        o, lse = _partial(q, k, v, s.mask.to(query.dtype), scale)
        if prefix is not None:
            o = _merge(o, lse, *_partial(q, prefix[0].unsqueeze(0), prefix[1].unsqueeze(0), None, scale))
        out[s.first : s.first + s.count] = o.view(heads, s.count, dim).transpose(0, 1)
    return out.unsqueeze(0), None


def _packed_training_attention(context, module, query, key, value, scale):
    """The same attention with gradients (the SFT loss): each segment's queries over the prefix's keys
    and its own, concatenated, in one SDPA call whose CPU kernel has a backward pass (the merge above
    would need the gradient of a log-sum-exp that kernel does not give). In training the segments lie end
    to end from the packed sequence's start, so they are split off it rather than sliced: the backward pass
    of a slice writes a gradient the size of the whole sequence for each segment, and adds them up."""
    import torch
    import torch.nn.functional as F

    prefix = context.prefix[module.layer_idx] if context.prefix else None
    counts = [s.count for s in context.segments]
    outs = []
    for s, q, k, v in zip(context.segments, *(t.split(counts, dim=2) for t in (query, key, value)), strict=True):
        if prefix is not None:
            k, v = torch.cat([prefix[0].unsqueeze(0), k], dim=2), torch.cat([prefix[1].unsqueeze(0), v], dim=2)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=s.mask, scale=scale, enable_gqa=True)
        outs.append(o[0].transpose(0, 1))
    return torch.cat(outs).unsqueeze(0), None
