"""Batched generation for many conversations at once, keeping each one's KV cache between turns.

One call takes, for every row, the full token ids of its prompt (the rendered conversation so
far) and the KV cache it left behind last turn. A row reuses the longest prefix of its prompt
whose keys and values are already known (its own cache, or a row before it in this batch, which
shares the system prompt and tool specs on an episode's first turn) and prefills only the rest.
Prefill runs row by row, each row inside its own slice of one preallocated, left-padded batch
buffer; decoding then runs the whole batch, one forward pass a token, until each row has emitted
an end-of-turn token. A prefix that every row shares is then kept once and read once per step
(``prefix_attention``): on a CPU, reading each row's copy of a long system prompt is most of the
cost of a decoding step. Finished rows leave the batch (compacting when half the rows are done),
and every row's keys and values are cut back out into its own cache for the next turn.

Keys are stored after rotary embedding, so moving them between buffers (to other columns) is
exact as long as each token keeps its position id; padding columns are masked out.
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from training import prefix_attention

if TYPE_CHECKING:
    import torch

MIN_SHARED_PREFIX = 64
"""Shorter shared prefixes are not worth a separate attention pass."""


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


@dataclass
class KVState:
    """What one conversation leaves behind: its token ids and their keys and values, layer by layer."""

    tokens: list[int] = field(default_factory=list)
    kv: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    """Per layer ``(keys, values)``, each ``[kv_heads, len(tokens), head_dim]``."""

    def prefix(self, n: int) -> KVState:
        """A copy of the first ``n`` tokens' state."""
        n = min(n, len(self.tokens))
        return KVState(self.tokens[:n], [(k[:, :n].clone(), v[:, :n].clone()) for k, v in self.kv])

    def nbytes(self) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv)


@dataclass
class Completion:
    """One row's result. ``logprobs[i]`` is the log-probability of ``token_ids[i]`` under the
    distribution it was drawn from (``logits / temperature`` when sampling, the raw logits when greedy)."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (an end-of-turn token, included in token_ids) or "length"
    prefilled: int  # prompt tokens run through the model this turn
    reused: int  # prompt tokens whose keys and values came from a cache


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def row_seed(seed: int, key: str) -> int:
    return zlib.crc32(f"{seed}:{key}".encode())


class _BufferLayer:
    """A cache layer over a preallocated ``[batch, heads, capacity, dim]`` buffer (or a view of it):
    appending writes in place, where a growing cache would copy all its keys every step."""

    is_sliding = False
    is_compileable = False
    is_initialized = True

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int):
        self.keys_buf, self.values_buf, self.length = keys, values, length

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        end = self.length + key_states.shape[-2]
        self.keys_buf[:, :, self.length : end] = key_states
        self.values_buf[:, :, self.length : end] = value_states
        self.length = end
        return self.keys_buf[:, :, :end], self.values_buf[:, :, :end]

    def get_seq_length(self) -> int:
        return self.length

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_max_length(self) -> int:
        return -1


def _buffer_cache(keys: list[torch.Tensor], values: list[torch.Tensor], length: int):
    from transformers.cache_utils import Cache, CacheLayerMixin

    # Registered, not inherited: the mixin's __init__ would allocate state we do not use.
    CacheLayerMixin.register(_BufferLayer)
    return Cache(layers=[_BufferLayer(k, v, length) for k, v in zip(keys, values, strict=True)])


class BatchGenerator:
    """Generates replies for a batch of prompts with one model; stateless between calls."""

    def __init__(self, model: Any, eos_token_ids: Sequence[int], pad_token_id: int):
        import inspect

        import torch

        self.model = model
        self.eos = set(int(t) for t in eos_token_ids)
        self.pad = int(pad_token_id)
        config = model.config.get_text_config(decoder=True)
        self.layers = config.num_hidden_layers
        self.kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self._torch = torch
        self.timings: dict[str, float] = {}
        """Seconds spent in the last call's prefill and decoding, and its decode steps."""

    def _forward(self, ids, positions, cache, mask=None):
        kwargs = {self.cache_arg: cache}
        out = self.model(
            input_ids=ids,
            position_ids=positions,
            attention_mask=mask,
            use_cache=True,
            logits_to_keep=1,
            **kwargs,
        )
        return out.logits[:, -1, :].float()

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        states: Sequence[KVState | None],
        sampling: Sampling,
        keys: Sequence[str] | None = None,
        share_prefixes: bool = True,
        shared: Sequence[KVState] = (),
    ) -> tuple[list[Completion], list[KVState]]:
        """Complete every prompt. ``states[i]`` is row i's cache from its last turn (or None);
        A list of states is consumed (emptied as rows are prefilled, to free memory early).
        ``keys[i]`` seeds row i's sampling generator; ``shared`` are caches any row may copy a prefix
        from (with ``share_prefixes``, so may later rows from earlier ones). Returns the completions
        and the new states."""
        torch = self._torch
        self.timings = {"prefill_s": 0.0, "decode_s": 0.0, "decode_steps": 0}
        with torch.inference_mode():
            return self._generate(prompts, states, sampling, keys, share_prefixes, shared)

    def _generate(self, prompts, states, sampling, keys, share_prefixes, shared):
        torch = self._torch
        n = len(prompts)
        if n == 0:
            return [], []
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        lengths = [len(p) for p in prompts]
        width = max(lengths)  # generated tokens start at this column, in every row
        shape = (n, self.kv_heads, width + sampling.max_new_tokens, self.head_dim)
        kbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        vbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        start = [width - length for length in lengths]  # each row's first column (left padding)
        for buf in kbuf + vbuf:  # masked padding still meets the values (weight 0), so no NaN there
            for i, s in enumerate(start):
                buf[i, :, :s] = 0

        tick = time.perf_counter()
        logits, reused = [], []
        for i, prompt in enumerate(prompts):
            keep = self._reuse(i, prompts, states, start, kbuf, vbuf, share_prefixes, shared)
            ids = torch.tensor([prompt[keep:]], device=self.device)
            positions = torch.arange(keep, len(prompt), device=self.device).unsqueeze(0)
            view = _buffer_cache(
                [k[i : i + 1, :, start[i] :] for k in kbuf], [v[i : i + 1, :, start[i] :] for v in vbuf], keep
            )
            logits.append(self._forward(ids, positions, view)[0])
            reused.append(keep)
            if isinstance(states, list):
                states[i] = None  # consumed: free the old cache as soon as it is copied
        del view  # it holds the prefill buffers, which decoding may not need
        logits = torch.stack(logits)
        self.timings["prefill_s"] = time.perf_counter() - tick
        tick = time.perf_counter()

        # Decoding reads every row's keys each step; a prefix that all rows share is read once.
        prefix = None
        common = min(common_prefix(prompts[0], p) for p in prompts)
        if n >= 2 and common >= MIN_SHARED_PREFIX and prefix_attention.supported(self.model):
            prefix = [
                (k[0, :, start[0] : start[0] + common].clone(), v[0, :, start[0] : start[0] + common].clone())
                for k, v in zip(kbuf, vbuf, strict=True)
            ]
            kbuf, vbuf, start, width = self._drop_prefix(kbuf, vbuf, start, width, common, sampling.max_new_tokens)

        generators = None
        if sampling.temperature > 0:
            keys = list(keys) if keys is not None else [str(i) for i in range(n)]
            generators = [torch.Generator(device=self.device).manual_seed(row_seed(sampling.seed, k)) for k in keys]
        out_ids: list[list[int]] = [[] for _ in range(n)]
        out_lps: list[list[float]] = [[] for _ in range(n)]
        finish = ["length"] * n
        new_states: list[KVState] = [KVState() for _ in range(n)]
        batch = list(range(n))  # batch row -> prompt index
        live = [True] * n
        length = width  # columns filled in every row
        cache = _buffer_cache(kbuf, vbuf, length)
        mask = self._mask(start, kbuf[0].shape[2])
        context = prefix_attention.shared_prefix(self.model, prefix) if prefix else contextlib.nullcontext()
        with context:
            while True:
                rows = [b for b in range(len(batch)) if live[b]]
                picked, lps = self._pick(
                    logits[rows], sampling, [generators[batch[b]] for b in rows] if generators else None
                )
                for b, token, lp in zip(rows, picked.tolist(), lps.tolist(), strict=True):
                    i = batch[b]
                    out_ids[i].append(token)
                    out_lps[i].append(lp)
                    if token in self.eos:
                        finish[i] = "stop"
                    if token in self.eos or len(out_ids[i]) >= sampling.max_new_tokens:
                        live[b] = False
                        # Its cache holds the prompt and every generated token but the last (never fed).
                        kv = self._row_kv(kbuf, vbuf, b, start[b], length, prefix)
                        new_states[i] = KVState(list(prompts[i]) + out_ids[i][:-1], kv)
                if not any(live):
                    break
                if 2 * sum(live) <= len(batch):
                    # Compact: drop finished rows and the padding columns no remaining row needs.
                    keep_rows = [b for b in range(len(batch)) if live[b]]
                    left = min(start[b] for b in keep_rows)
                    index = torch.tensor(keep_rows, device=self.device)
                    kbuf = [k.index_select(0, index)[:, :, left:] for k in kbuf]
                    vbuf = [v.index_select(0, index)[:, :, left:] for v in vbuf]
                    logits = logits.index_select(0, index)
                    batch = [batch[b] for b in keep_rows]
                    start = [start[b] - left for b in keep_rows]
                    live = [True] * len(batch)
                    width, length = width - left, length - left
                    cache = _buffer_cache(kbuf, vbuf, length)
                    mask = self._mask(start, kbuf[0].shape[2])
                feed = [out_ids[i][-1] if live[b] else self.pad for b, i in enumerate(batch)]
                positions = [lengths[i] + len(out_ids[i]) - 1 for i in batch]
                logits = self._forward(
                    torch.tensor(feed, device=self.device).unsqueeze(1),
                    torch.tensor(positions, device=self.device).unsqueeze(1),
                    cache,
                    mask[:, : length + 1],
                )
                length += 1
                self.timings["decode_steps"] += 1

        self.timings["decode_s"] = time.perf_counter() - tick
        completions = [
            Completion(out_ids[i], out_lps[i], finish[i], lengths[i] - reused[i], reused[i]) for i in range(n)
        ]
        return completions, new_states

    def _drop_prefix(self, kbuf, vbuf, start, width, common, max_new):
        """New left-padded buffers holding each row's tokens after the shared prefix."""
        torch = self._torch
        rest = [width - s - common for s in start]
        rwidth = max(rest)
        shape = (len(start), self.kv_heads, rwidth + max_new, self.head_dim)
        new_start = [rwidth - r for r in rest]
        out = []
        for buf in (kbuf, vbuf):
            moved = []
            for old in buf:
                new = torch.zeros(shape, dtype=self.dtype, device=self.device)
                for i, s in enumerate(start):
                    new[i, :, new_start[i] : rwidth] = old[i, :, s + common : width]
                moved.append(new)
            out.append(moved)
        return out[0], out[1], new_start, rwidth

    def _row_kv(self, kbuf, vbuf, b, first, length, prefix):
        """Batch row b's keys and values, per layer ``[kv_heads, tokens, dim]``, as a copy."""
        if prefix is None:
            return [
                (k[b, :, first:length].clone(), v[b, :, first:length].clone()) for k, v in zip(kbuf, vbuf, strict=True)
            ]
        torch = self._torch
        return [
            (torch.cat([pk, k[b, :, first:length]], dim=1), torch.cat([pv, v[b, :, first:length]], dim=1))
            for (pk, pv), k, v in zip(prefix, kbuf, vbuf, strict=True)
        ]

    def _reuse(self, i, prompts, states, start, kbuf, vbuf, share_prefixes, shared) -> int:
        """Copy into row i the keys and values of the longest prefix of its prompt already computed:
        by its own last turn, a shared cache, or an earlier row of this batch. Returns its length."""
        prompt = prompts[i]
        limit = len(prompt) - 1  # always run the last token, for its logits
        keep, source = 0, None
        for state in [states[i], *shared] if share_prefixes else [states[i]]:
            if state is not None and state.kv:
                known = min(common_prefix(state.tokens, prompt), limit)
                if known > keep:
                    keep, source = known, state.kv
        if share_prefixes:
            for j in range(i):
                common = min(common_prefix(prompts[j], prompt), limit)
                if common > keep:
                    keep = common
                    source = [(k[j, :, start[j] :], v[j, :, start[j] :]) for k, v in zip(kbuf, vbuf, strict=True)]
        if keep:
            for layer, (k, v) in enumerate(source):
                kbuf[layer][i, :, start[i] : start[i] + keep] = k[:, :keep]
                vbuf[layer][i, :, start[i] : start[i] + keep] = v[:, :keep]
        return keep

    def _mask(self, start: list[int], columns: int):
        torch = self._torch
        cols = torch.arange(columns, device=self.device)
        return (cols.unsqueeze(0) >= torch.tensor(start, device=self.device).unsqueeze(1)).long()

    def _pick(self, logits, sampling: Sampling, generators):
        """The next token of each row and its log-probability."""
        torch = self._torch
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
        picked = torch.stack([torch.multinomial(probs[r], 1, generator=g)[0] for r, g in enumerate(generators)])
        return picked, logprobs.gather(1, picked.unsqueeze(1)).squeeze(1)
