"""Batched generation for many conversations at once, keeping each one's KV cache between turns.

One call takes, for every row, the full token ids of its prompt (the rendered conversation so far) and
the KV cache it left behind last turn. A row reuses the longest prefix of its prompt whose keys and
values are already known (its own cache, or a shared one) and prefills only the rest.

When the rows share a long prefix (the system prompt and tool specs), its keys and values are kept
once: taken from a cache that holds them, or prefilled once for the whole batch. Every row's new tokens
are then prefilled together, in one forward pass over a packed sequence (``prefix_attention.packed``),
into one preallocated, left-padded batch buffer that holds each row's own tokens. Decoding runs the
whole batch, one forward pass a token, until each row has emitted an end-of-turn token, reading the
shared prefix once per step (``prefix_attention.shared_prefix``): on a CPU, reading each row's copy of
a long system prompt would be most of the cost of a decoding step. Finished rows leave the batch
(the last rows moving into their places), and every row's own keys and values are cut back out into
its own cache for the next turn, which references the shared prefix instead of copying it.

A batch of one, a model whose attention is not SDPA, or ``batched_prefill = False`` prefills row by row.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from training.inference import prefix_attention
from training.inference.decoding import Decoder, Decoding
from training.inference.kv_cache import KVState, buffer_cache, common_prefix, copy_pieces
from training.inference.sampling import Sampling
from training.inference.threads import ThreadTuner

__all__ = ["BatchGenerator", "Completion", "KVState", "Sampling", "common_prefix"]

MIN_SHARED_PREFIX = 64
"""Shorter shared prefixes are not worth a separate attention pass."""
PROBE_TOKENS = 8
"""Tokens of the forward pass that times the thread counts before the first call (``ThreadTuner.call``)."""
PACKED_TOKENS = 2048
"""At most this many new tokens (but at least one row's) in one packed prefill pass: bounds its activations
(the size is a measured choice: docs/experiments.md)."""


@dataclass
class Completion:
    """One row's result. ``logprobs[i]`` is the log-probability of ``token_ids[i]`` under the
    distribution it was drawn from (``logits / temperature`` when sampling, the raw logits when greedy)."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (an end-of-turn token, included in token_ids) or "length"
    prefilled: int  # prompt tokens run through the model this turn
    reused: int  # prompt tokens whose keys and values came from a cache


class BatchGenerator(Decoder):
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
        self.batched_prefill = True
        """Prefill a batch's rows in one packed forward pass (False: row by row, as a batch of one is)."""
        self.timings: dict[str, float] = {}
        """Seconds spent in the last call's prefill and decoding, and its decode steps."""
        self.threads = ThreadTuner(torch.get_num_threads())
        """The thread count generation runs on, chosen by timing decoding steps (``training.inference.threads``)."""

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
        from. With ``share_prefixes``, so may rows from each other: the prefix they all share is
        computed once (row by row, a later row copies from an earlier one). Returns the completions and
        the new states, which hold the shared prefix by reference."""
        torch = self._torch
        self.timings = {"prefill_s": 0.0, "decode_s": 0.0, "decode_steps": 0}
        with torch.inference_mode(), self.threads.call(self._probe):
            return self._generate(prompts, states, sampling, keys, share_prefixes, shared)

    def _probe(self) -> None:
        """A forward pass over a few tokens with no cache: the cost of a decoding step, for the thread count."""
        ids = self._torch.full((1, PROBE_TOKENS), self.pad, device=self.device)
        self.model(input_ids=ids, use_cache=False, logits_to_keep=1)

    def _generate(self, prompts, states, sampling, keys, share_prefixes, shared):
        n = len(prompts)
        if n == 0:
            return [], []
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        tick = time.perf_counter()
        if self.batched_prefill and n >= 2 and prefix_attention.supported(self.model):
            prefill = self._prefill_packed
        else:
            prefill = self._prefill_rows
        logits, kbuf, vbuf, start, width, prefix, reused = prefill(
            prompts, states, sampling.max_new_tokens, share_prefixes, shared
        )
        self.timings["prefill_s"] = time.perf_counter() - tick

        tick = time.perf_counter()
        rows = Decoding(prompts, logits, kbuf, vbuf, start, width, prefix or [], self._generators(sampling, keys, n))
        rows.cache, rows.mask = buffer_cache(kbuf, vbuf, width), self._mask(start, kbuf[0].shape[2])
        context = prefix_attention.shared_prefix(self.model, prefix) if prefix else contextlib.nullcontext()
        with context:
            self._decode(rows, sampling)
        self.timings["decode_s"] = time.perf_counter() - tick
        lengths = [len(p) for p in prompts]
        completions = [
            Completion(rows.out_ids[i], rows.out_lps[i], rows.finish[i], lengths[i] - reused[i], reused[i])
            for i in range(n)
        ]
        return completions, rows.states

    def _buffers(self, own_lengths: list[int], max_new: int):
        """Left-padded ``[rows, kv_heads, width + max_new, head_dim]`` buffers, one pair a layer, each
        row's tokens ending at column ``width``; returns them, each row's first column and ``width``."""
        torch = self._torch
        width = max(own_lengths)
        shape = (len(own_lengths), self.kv_heads, width + max_new, self.head_dim)
        kbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        vbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        start = [width - length for length in own_lengths]
        for buf in kbuf + vbuf:  # masked padding still meets the values (weight 0), so no NaN there
            for i, s in enumerate(start):
                buf[i, :, :s] = 0
        return kbuf, vbuf, start, width

    def _known(self, prompt, candidates) -> tuple[int, KVState | None]:
        """The longest prefix of ``prompt`` (but its last token, which must run for its logits) whose keys
        and values one of ``candidates`` holds, and that cache."""
        keep, source = 0, None
        for state in candidates:
            if state is not None and (state.kv or state.shared):
                known = min(common_prefix(state.tokens, prompt), len(prompt) - 1)
                if known > keep:
                    keep, source = known, state
        return keep, source

    def _prefill_packed(self, prompts, states, max_new, share_prefixes, shared):
        """Every row's new tokens in one packed forward pass (a few, for very many tokens), after the
        prefix all rows share. Returns the last tokens' logits, the batch buffers, each row's first
        column, the column where generation starts, the shared prefix's keys and values (or None) and
        each row's reused prompt tokens."""
        torch = self._torch
        n = len(prompts)
        lengths = [len(p) for p in prompts]
        known = [self._known(p, [states[i], *shared] if share_prefixes else [states[i]]) for i, p in enumerate(prompts)]
        keep = [k for k, _ in known]
        common = 0
        if share_prefixes:
            common = min(min(common_prefix(prompts[0], p) for p in prompts), min(lengths) - 1)
            common = common if common >= MIN_SHARED_PREFIX else 0
        prefix, reused = None, list(keep)
        if common:
            prefix, covered = self._prefix_kv(prompts[0][:common], [*states, *shared])
            # The row that prefilled the prefix is charged with it; the others reused it.
            owner = next((i for i in range(n) if keep[i] < common), None)
            reused = [covered if i == owner else max(keep[i], common) for i in range(n)]

        kbuf, vbuf, start, width = self._buffers([length - common for length in lengths], max_new)
        done = [0] * n  # each row's own tokens already in the buffers
        for i in range(n):
            source = known[i][1]
            if keep[i] > common:
                done[i] = copy_pieces(source.pieces(common, keep[i]), kbuf, vbuf, i, start[i])
            known[i] = None
            if isinstance(states, list):
                states[i] = None  # consumed: free the old cache as soon as it is copied
        del source

        logits = [None] * n
        rows = list(range(n))
        while rows:
            group, total = [], 0
            while rows and (not group or total + lengths[rows[0]] - common - done[rows[0]] <= PACKED_TOKENS):
                group.append(rows.pop(0))
                total += lengths[group[-1]] - common - done[group[-1]]
            segments, ids, positions, batch_rows, columns = [], [], [], [], []
            for i in group:
                first = common + done[i]  # the row's first new token, in its prompt
                count = lengths[i] - first
                segments.append(prefix_attention.Segment(i, len(ids), count, start[i], width))
                ids.extend(prompts[i][first:])
                positions.extend(range(first, lengths[i]))
                batch_rows.extend([i] * count)
                columns.extend(range(width - count, width))
            scatter = (torch.tensor(batch_rows, device=self.device), torch.tensor(columns, device=self.device))
            last = torch.tensor([s.first + s.count - 1 for s in segments], device=self.device)
            with prefix_attention.packed(self.model, prefix, segments):
                out = self.model(
                    input_ids=torch.tensor([ids], device=self.device),
                    position_ids=torch.tensor([positions], device=self.device),
                    # A prepared 4D mask is passed through untouched: packed attention needs none.
                    attention_mask=torch.ones(1, 1, 1, 1, dtype=torch.bool, device=self.device),
                    use_cache=True,
                    logits_to_keep=last,
                    **{self.cache_arg: buffer_cache(kbuf, vbuf, width, scatter)},
                )
            for s, row_logits in zip(segments, out.logits[0].float(), strict=True):
                logits[s.row] = row_logits
        return torch.stack(logits), kbuf, vbuf, start, width, prefix, reused

    def _prefix_kv(self, tokens, candidates) -> tuple[list, int]:
        """The keys and values of ``tokens``, a prefix of every prompt: those a cache already shares
        when it holds exactly these, else a copy of the longest part a cache holds, the rest prefilled
        here. Returns them and the number of tokens that came from a cache."""
        torch = self._torch
        covered, source = 0, None
        for state in candidates:
            if state is not None and (state.kv or state.shared):
                known = min(common_prefix(state.tokens, tokens), len(tokens))
                if known > covered:
                    covered, source = known, state
        if covered == len(tokens) and source is not None and source.shared_len == covered:
            return source.shared, covered
        shape = (1, self.kv_heads, len(tokens), self.head_dim)
        kbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        vbuf = [torch.empty(shape, dtype=self.dtype, device=self.device) for _ in range(self.layers)]
        if covered and source is not None:  # a cache covered a part: source is the one
            copy_pieces(source.pieces(0, covered), kbuf, vbuf, 0, 0)
        if covered < len(tokens):
            ids = torch.tensor([tokens[covered:]], device=self.device)
            positions = torch.arange(covered, len(tokens), device=self.device).unsqueeze(0)
            self._forward(ids, positions, buffer_cache(kbuf, vbuf, covered))
        return [(k[0], v[0]) for k, v in zip(kbuf, vbuf, strict=True)], covered

    def _prefill_rows(self, prompts, states, max_new, share_prefixes, shared):
        """Row by row, each in its own slice of the batch buffers; returns what ``_prefill_packed`` does."""
        torch = self._torch
        n = len(prompts)
        kbuf, vbuf, start, width = self._buffers([len(p) for p in prompts], max_new)
        logits, reused = [], []
        for i, prompt in enumerate(prompts):
            keep = self._reuse(i, prompts, states, start, kbuf, vbuf, share_prefixes, shared)
            ids = torch.tensor([prompt[keep:]], device=self.device)
            positions = torch.arange(keep, len(prompt), device=self.device).unsqueeze(0)
            view = buffer_cache(
                [k[i : i + 1, :, start[i] :] for k in kbuf], [v[i : i + 1, :, start[i] :] for v in vbuf], keep
            )
            logits.append(self._forward(ids, positions, view)[0])
            reused.append(keep)
            if isinstance(states, list):
                states[i] = None  # consumed: free the old cache as soon as it is copied
        del view  # it holds the prefill buffers, which decoding may not need

        # Decoding reads every row's keys each step; a prefix that all rows share is read once.
        prefix = None
        common = min(common_prefix(prompts[0], p) for p in prompts)
        if n >= 2 and common >= MIN_SHARED_PREFIX and prefix_attention.supported(self.model):
            prefix = [
                (k[0, :, start[0] : start[0] + common].clone(), v[0, :, start[0] : start[0] + common].clone())
                for k, v in zip(kbuf, vbuf, strict=True)
            ]
            kbuf, vbuf, start, width = self._drop_prefix(kbuf, vbuf, start, width, common, max_new)
        return torch.stack(logits), kbuf, vbuf, start, width, prefix, reused

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

    def _reuse(self, i, prompts, states, start, kbuf, vbuf, share_prefixes, shared) -> int:
        """Copy into row i the keys and values of the longest prefix of its prompt already computed:
        by its own last turn, a shared cache, or an earlier row of this batch. Returns its length."""
        prompt = prompts[i]
        keep, state = self._known(prompt, [states[i], *shared] if share_prefixes else [states[i]])
        pieces = state.pieces(0, keep) if keep and state is not None else None
        if share_prefixes:
            for j in range(i):
                common = min(common_prefix(prompts[j], prompt), len(prompt) - 1)
                if common > keep:
                    keep = common
                    span = slice(start[j], start[j] + keep)
                    pieces = [[(k[j, :, span], v[j, :, span])] for k, v in zip(kbuf, vbuf, strict=True)]
        if keep and pieces is not None:  # kept from a cache or an earlier row: pieces holds it
            copy_pieces(pieces, kbuf, vbuf, i, start[i])
        return keep

    def _mask(self, start: list[int], columns: int):
        torch = self._torch
        cols = torch.arange(columns, device=self.device)
        return (cols.unsqueeze(0) >= torch.tensor(start, device=self.device).unsqueeze(1)).long()
