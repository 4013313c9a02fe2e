"""Token examples (ids with a loss mask on the assistant's tokens) and the batches of a step.

Each step's batch is fixed by the seed (:func:`plan_batches`), so a resumed run sees the same data.
Its rows are split into groups that each share a prefix (the system prompt and tool specs, most of
an episode's tokens), and each group is packed end to end into one sequence (:func:`collate`): the
trainer runs a group's prefix once and its rows' suffixes with no padding (see ``training.sft``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox.errors import UsageError
from sandbox.seeds import child_seed


@dataclass
class Example:
    """One tokenized trajectory: ``labels[i]`` is True where token ``i`` is the assistant's."""

    ids: list[int]
    labels: list[bool]
    perturbations: tuple[str, ...] = ()
    """Names of the perturbations of the case it came from (empty: clean)."""
    family: str = ""
    first_label: int = field(init=False)

    def __post_init__(self) -> None:
        self.first_label = next((i for i, m in enumerate(self.labels) if m), len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)


def plan_batches(examples: Sequence[Example], batch_size: int, steps: int, seed: int) -> list[list[int]]:
    """The index batches of every step, fixed by ``seed`` so that a resumed run sees the same data.

    Each pass over the data is a plain shuffle, not grouped by length: an episode's length follows its
    task family, and batches of one family pull the model towards one plan (docs/experiments.md).
    Packing the rows (see :func:`collate`) makes mixed lengths cost no padding.
    """
    if not examples:
        raise UsageError("no training examples: the oracle produced no good trajectory for the cases")
    batches: list[list[int]] = []
    epoch = 0
    while len(batches) < steps:
        order = list(range(len(examples)))
        random.Random(child_seed(seed, "epoch", epoch)).shuffle(order)
        chunk = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        batches.extend([b for b in chunk if len(b) == batch_size] or chunk)  # drop the ragged tail unless it is all
        epoch += 1
    return batches[:steps]


def common_prefix(rows: Sequence[Example]) -> int:
    """Length of the tokens every row shares, stopping before any row's first label's predictor."""
    limit = min(r.first_label for r in rows) - 1
    first = rows[0].ids
    n = 0
    while n < limit and all(r.ids[n] == first[n] for r in rows[1:]):
        n += 1
    return max(n, 0)


GROUP_OVERHEAD = 64
"""Tokens a group's extra prefix pass is counted as costing, so rows are split off only for a real gain."""


def prefix_groups(rows: Sequence[Example]) -> list[tuple[list[int], int]]:
    """The rows split into groups, each of which computes its common prefix once, so as to run the fewest
    tokens. Clean rows share the system prompt and tool specs; a perturbed row (a renamed tool, another
    description) leaves that prefix early, and in one group with the clean rows it would cut everyone's
    shared part short. Sorted by opening, the best split into runs is found exactly (a batch is small).
    Returns each group's row indices and the length of its common prefix."""
    order = sorted(range(len(rows)), key=lambda i: rows[i].ids[: rows[i].first_label])
    n = len(order)
    best, start = [0] + [math.inf] * n, [0] * (n + 1)  # fewest tokens for the first j rows; where its last run starts
    shared = [0] * (n + 1)  # the common prefix of that last run
    for j in range(1, n + 1):
        for i in range(j):
            group = [rows[k] for k in order[i:j]]
            p = common_prefix(group)
            cost = best[i] + GROUP_OVERHEAD + p + sum(len(r) - p for r in group)
            if cost < best[j]:
                best[j], start[j], shared[j] = cost, i, p
    groups, j = [], n
    while j:
        groups.append((order[start[j] : j], shared[j]))
        j = start[j]
    return groups[::-1]


@dataclass
class Packed:
    """Rows that share ``prefix`` (1 × P): ``input_ids`` (1 × T) their suffixes packed end to end,
    ``counts`` each suffix's length; ``targets`` (T) the next token that each position predicts where the
    loss applies, -100 elsewhere (and at each suffix's last token, which predicts nothing)."""

    prefix: Any
    input_ids: Any
    counts: Any
    targets: Any

    def to(self, device: Any) -> Packed:
        return Packed(*(t.to(device) for t in (self.prefix, self.input_ids, self.counts, self.targets)))


@dataclass
class Batch:
    """One step's rows, in groups that each share a prefix."""

    groups: list[Packed]
    tokens: int = 0
    label_tokens: int = 0

    def to(self, device: Any) -> Batch:
        self.groups = [g.to(device) for g in self.groups]
        return self


def pack(rows: Sequence[Example], p: int) -> Packed:
    import torch

    ids: list[int] = []
    targets: list[int] = []
    for r in rows:
        ids.extend(r.ids[p:])
        targets.extend(t if keep else -100 for t, keep in zip(r.ids[p + 1 :], r.labels[p + 1 :], strict=True))
        targets.append(-100)
    return Packed(
        prefix=torch.tensor([rows[0].ids[:p]], dtype=torch.long),
        input_ids=torch.tensor([ids], dtype=torch.long),
        counts=torch.tensor([len(r) - p for r in rows], dtype=torch.long),
        targets=torch.tensor(targets, dtype=torch.long),
    )


def collate(rows: Sequence[Example], share_prefix: bool = True) -> Batch:
    if share_prefix:
        packed = [pack([rows[i] for i in group], p) for group, p in prefix_groups(rows)]
    else:
        packed = [pack(rows, 0)]
    return Batch(packed, tokens=sum(len(r) for r in rows), label_tokens=sum(sum(r.labels) for r in rows))
