"""Decoding a batch of prompts, once prefilled: one forward pass a token for every row still running, rows leaving
the batch as they finish (see ``generation``, whose :class:`~training.inference.generation.BatchGenerator` this
half belongs to)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from training.inference.kv_cache import KVState, buffer_cache
from training.inference.sampling import Sampling, pick, row_seed
from training.inference.threads import ThreadTuner


class Decoding:
    """The batch being decoded: its key/value buffers (left-padded, row ``b`` from column ``start[b]``, every
    row filled up to ``length``), the prompt index of each batch row (``batch``), which rows still run, and
    each prompt's output so far."""

    def __init__(self, prompts, logits, kbuf, vbuf, start, width, prefix, generators) -> None:
        n = len(prompts)
        self.prompts, self.logits, self.kbuf, self.vbuf, self.start = prompts, logits, kbuf, vbuf, start
        self.length = width  # columns filled in every row
        self.prefix, self.generators = prefix, generators
        self.batch = list(range(n))  # batch row -> prompt index
        self.live = [True] * n
        self.out_ids: list[list[int]] = [[] for _ in range(n)]
        self.out_lps: list[list[float]] = [[] for _ in range(n)]
        self.finish = ["length"] * n
        self.states: list[KVState] = [KVState() for _ in range(n)]
        self.cache: Any = None
        self.mask: Any = None


class Decoder:
    """The decoding half of :class:`~training.inference.generation.BatchGenerator`."""

    eos: set[int]
    pad: int
    device: Any
    timings: dict[str, float]
    threads: ThreadTuner
    _torch: Any

    if TYPE_CHECKING:

        def _forward(self, ids, positions, cache, mask=None): ...

        def _mask(self, start: list[int], columns: int): ...

    def _generators(self, sampling: Sampling, keys, n: int) -> list | None:
        """One seeded generator per row when sampling (greedy needs none)."""
        if sampling.temperature <= 0:
            return None
        keys = list(keys) if keys is not None else [str(i) for i in range(n)]
        return [self._torch.Generator(device=self.device).manual_seed(row_seed(sampling.seed, k)) for k in keys]

    def _decode(self, rows: Decoding, sampling: Sampling) -> None:
        """One forward pass a token for the whole batch, until every row has finished."""
        torch = self._torch
        while True:
            live = [b for b in range(len(rows.batch)) if rows.live[b]]
            generators = [rows.generators[rows.batch[b]] for b in live] if rows.generators else None
            picked, lps = pick(rows.logits[live], sampling, generators)
            for b, token, lp in zip(live, picked.tolist(), lps.tolist(), strict=True):
                self._emit(rows, b, token, lp, sampling.max_new_tokens)
            if not any(rows.live):
                return
            if not all(rows.live):
                self._compact(rows)
            feed = [rows.out_ids[i][-1] if rows.live[b] else self.pad for b, i in enumerate(rows.batch)]
            positions = [len(rows.prompts[i]) + len(rows.out_ids[i]) - 1 for i in rows.batch]
            ids = torch.tensor(feed, device=self.device).unsqueeze(1)
            at = torch.tensor(positions, device=self.device).unsqueeze(1)
            mask = rows.mask[:, : rows.length + 1]
            rows.logits = self.threads.step(partial(self._forward, ids, at, rows.cache, mask))
            rows.length += 1
            self.timings["decode_steps"] += 1

    def _emit(self, rows: Decoding, b: int, token: int, lp: float, max_new: int) -> None:
        """Append batch row ``b``'s next token; at its end-of-turn token or its limit, the row finishes."""
        i = rows.batch[b]
        rows.out_ids[i].append(token)
        rows.out_lps[i].append(lp)
        if token in self.eos:
            rows.finish[i] = "stop"
        if token in self.eos or len(rows.out_ids[i]) >= max_new:
            rows.live[b] = False
            # Its cache holds the prompt and every generated token but the last (never fed).
            start, length = rows.start[b], rows.length
            own = [
                (k[b, :, start:length].clone(), v[b, :, start:length].clone())
                for k, v in zip(rows.kbuf, rows.vbuf, strict=True)
            ]
            rows.states[i] = KVState(list(rows.prompts[i]) + rows.out_ids[i][:-1], own, rows.prefix)

    def _compact(self, rows: Decoding) -> None:
        """Finished rows leave the batch at once (a finished row costs as much as a live one every step): the
        last live rows move into their places, in the same buffers, and the padding columns no remaining row
        needs are cut off."""
        count = sum(rows.live)
        order = list(range(count))  # new batch row -> old one
        holes = [b for b in range(count) if not rows.live[b]]
        movers = [b for b in range(count, len(rows.batch)) if rows.live[b]]
        for hole, mover in zip(holes, movers, strict=True):
            for buf in rows.kbuf + rows.vbuf:
                buf[hole, :, rows.start[mover] : rows.length] = buf[mover, :, rows.start[mover] : rows.length]
            order[hole] = mover
        left = min(rows.start[b] for b in order)
        rows.kbuf = [k[:count, :, left:] for k in rows.kbuf]
        rows.vbuf = [v[:count, :, left:] for v in rows.vbuf]
        rows.logits = rows.logits[order]
        rows.batch = [rows.batch[b] for b in order]
        rows.start = [rows.start[b] - left for b in order]
        rows.live = [True] * count
        rows.length -= left
        rows.cache = buffer_cache(rows.kbuf, rows.vbuf, rows.length)
        rows.mask = self._mask(rows.start, rows.kbuf[0].shape[2])
