"""The GRPO update: rewards normalised within each task's group, the episodes' turns as rows to score,
their log-probabilities, and PPO's clipped objective.

The loss is the clipped policy-gradient objective of PPO on the tokens the agent generated, and on
nothing else: each turn is its own prompt (the rendered conversation, tool results included) plus
its completion, and only the completion is scored. The ratio is taken against the log-probabilities
recorded at sampling time; an optional KL term (k3 estimator) holds the policy near the initial one,
which with LoRA is the same model with its adapters switched off.

An episode's turns are usually one growing sequence (the next turn's prompt starts with this turn's
prompt and reply), so they are merged into one row; a group's rows share the task's opening (system
prompt, tool specs, query: most of the tokens), computed once per micro-batch. Groups whose rewards
are all equal carry no signal and are skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.episode import Episode

LOSS_NORMS = ("token", "sequence")
"""How the policy loss averages: over the step's generated tokens, or over its rows (see :func:`token_weights`)."""


@dataclass
class Row:
    """One sequence to score: ``ids`` with the completions at ``spans`` (start, end), their sampling log-probs."""

    ids: list[int]
    spans: list[tuple[int, int]]
    old_logprobs: list[float]
    advantage: float


def group_advantages(rewards: Sequence[float], group: int, eps: float = 1e-4) -> list[float]:
    """Rewards normalised within each consecutive group of ``group``: (r - mean) / (std + eps)."""
    out: list[float] = []
    for start in range(0, len(rewards), group):
        chunk = rewards[start : start + group]
        mean = sum(chunk) / len(chunk)
        std = math.sqrt(sum((r - mean) ** 2 for r in chunk) / len(chunk))
        out.extend((r - mean) / (std + eps) if std > 0 else 0.0 for r in chunk)
    return out


def episode_rows(episode: Episode, advantage: float) -> list[Row]:
    """The episode's turns as rows: a turn whose prompt extends the row so far joins it, else it starts a new one."""
    rows: list[Row] = []
    for turn in episode.meta:
        prompt, completion = list(turn.get("prompt_ids", [])), list(turn.get("completion_ids", []))
        if not completion:
            continue
        row = rows[-1] if rows else None
        if row is None or prompt[: len(row.ids)] != row.ids:
            row = Row([], [], [], advantage)
            rows.append(row)
        start = len(prompt)
        row.ids = prompt + completion
        row.spans.append((start, start + len(completion)))
        row.old_logprobs.extend(turn["logprobs"])
    return rows


def scored_rows(episodes: Sequence[Episode], advantages: Sequence[float], kl: float) -> list[Row]:
    """The rows of the update. An episode whose advantage is 0 (its group's rewards were all equal) has no policy
    gradient, so it is left out, unless the KL term is on: then it is scored for the KL alone, so that the KL also
    acts on the tasks the policy already solves, which nothing else holds while the others are learned."""
    return [row for ep, a in zip(episodes, advantages, strict=True) if a != 0 or kl > 0 for row in episode_rows(ep, a)]


def row_logprobs(model: Any, rows: Sequence[Row], pad_id: int, temperature: float) -> Any:
    """Log-probabilities (1-D, in span order) of every row's completion tokens; the common prefix runs once."""
    import torch
    from transformers import DynamicCache

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    body = getattr(causal_lm, causal_lm.base_model_prefix)
    head = causal_lm.get_output_embeddings()
    device = head.weight.device
    # The shared prefix must stop before the position that predicts the first completion token.
    limit = min(r.spans[0][0] for r in rows) - 1
    first = rows[0].ids
    p = 0
    while p < limit and all(r.ids[p] == first[p] for r in rows[1:]):
        p += 1
    width = max(len(r.ids) for r in rows) - p
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    targets = torch.full((len(rows), width), -1, dtype=torch.long)  # the token position t predicts, if scored
    for i, r in enumerate(rows):
        input_ids[i, : len(r.ids) - p] = torch.tensor(r.ids[p:])
        for start, end in r.spans:
            targets[i, start - 1 - p : end - 1 - p] = torch.tensor(r.ids[start:end])
    input_ids, targets = input_ids.to(device), targets.to(device)
    cache = None
    if p:
        prefix = body(input_ids=torch.tensor([first[:p]], device=device), use_cache=True).cache
        cache = DynamicCache(
            ddp_cache_data=[
                (layer.keys.expand(len(rows), -1, -1, -1), layer.values.expand(len(rows), -1, -1, -1))
                for layer in prefix.layers
            ]
        )
    hidden = body(input_ids=input_ids, cache=cache, use_cache=cache is not None).last_hidden_state
    keep = targets >= 0
    logits = head(hidden[keep]).float()
    if temperature > 0:
        logits = logits / temperature
    return torch.log_softmax(logits, dim=-1).gather(1, targets[keep].unsqueeze(1)).squeeze(1)


def logprob_module(model: Any) -> Any:
    """The model wrapped so that its ``forward`` is :func:`row_logprobs`, or for a
    :class:`~training.batches.Batch` of gold episodes the SFT loss: under ``accelerate launch`` (DDP) the
    computation then goes through one module's forward, as gradient synchronisation requires.
    Every process runs the same rollouts and rows (the same seeds), so the averaged gradient is exact."""
    import torch

    from training.batches import Batch
    from training.sft import batch_loss

    class PolicyLogprobs(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, rows: Sequence[Row] | Batch, pad_id: int = 0, temperature: float = 1.0) -> Any:
            if isinstance(rows, Batch):
                return batch_loss(self.model, rows)
            return row_logprobs(self.model, rows, pad_id, temperature)

    return PolicyLogprobs(model)


def policy_loss(
    new: Any, old: Any, advantages: Any, clip: float, weights: Any, ref: Any | None = None, kl: float = 0.0
) -> tuple[Any, dict[str, float]]:
    """Per-token clipped surrogate (PPO) plus ``kl`` × the k3 KL estimate to ``ref``, each token's term times its
    weight in the step's mean (:func:`token_weights`), summed."""
    import torch

    ratio = torch.exp(new - old)
    surrogate = torch.minimum(ratio * advantages, torch.clamp(ratio, 1 - clip, 1 + clip) * advantages)
    loss = -(weights * surrogate).sum()
    stats = {"clipped": float(((ratio - 1).abs() > clip).float().sum())}
    if ref is not None and kl > 0:
        log_r = ref - new
        k3 = torch.exp(log_r) - log_r - 1
        loss = loss + kl * (weights * k3).sum()
        stats["kl"] = float(k3.detach().sum())
    return loss, stats


def token_weights(rows: Sequence[Row], chunk: Sequence[Row], norm: str) -> list[float]:
    """Each of ``chunk``'s scored tokens' weight in the mean over all ``rows`` of the step: ``"token"``, every
    generated token counts once (DAPO); ``"sequence"``, every row counts once whatever its length (GRPO's
    original mean), so a long failing reply weighs no more than a short success."""
    if norm == "token":
        n_tokens = sum(len(r.old_logprobs) for r in rows)
        return [1 / n_tokens for r in chunk for _ in r.old_logprobs]
    return [1 / (len(rows) * len(r.old_logprobs)) for r in chunk for _ in r.old_logprobs]


def backward(loop: Any, policy: Any, reference: Any | None, rows: Sequence[Row], pad_id: int, cfg: Any) -> Counter:
    """The policy-gradient backward pass over ``rows``, ``cfg.micro_batch`` at a time (the loss is a mean over all
    their scored tokens, or of their rows: ``cfg.loss_norm``); the loss, clipped tokens and KL. ``loop`` is the run's
    :class:`~training.loop.Loop`; the KL's reference is ``reference``, else ``policy`` with its adapters off."""
    import torch

    device = loop.accelerator.device
    totals: Counter = Counter()
    for i in range(0, len(rows), cfg.micro_batch):
        chunk = rows[i : i + cfg.micro_batch]
        old = torch.tensor([lp for r in chunk for lp in r.old_logprobs], device=device)
        adv = torch.tensor([r.advantage for r in chunk for _ in r.old_logprobs], device=device)
        weights = torch.tensor(token_weights(rows, chunk, cfg.loss_norm), device=device)
        ref = None
        if cfg.kl > 0:
            with torch.no_grad(), loop.accelerator.autocast():
                if reference is not None:
                    ref = row_logprobs(reference, chunk, pad_id, cfg.temperature)
                else:
                    with policy.disable_adapter():
                        ref = row_logprobs(policy, chunk, pad_id, cfg.temperature)
        with loop.accelerator.autocast():
            new = loop.module(chunk, pad_id, cfg.temperature)
            loss, stats = policy_loss(new, old, adv, cfg.clip, weights, ref, cfg.kl)
        loop.accelerator.backward(loss)
        totals.update(stats)
        totals["loss"] += float(loss.detach())  # type: ignore[assignment]  # a Counter sums floats; typeshed says int
    return totals
