"""Supervised fine-tuning: a plain loop on ``accelerate`` that a reader follows top to bottom.

Where the time goes: a POI episode here is about 880 tokens, of which about 620 are the system
prompt and the tool specs, the same in every clean episode, and only about 105 are the
assistant's (the loss). So each step runs each group of rows' common prefix once (batch 1, with
gradients; clean rows form one group, a perturbed row with other tool specs may form its own) and
then only the rows' suffixes, packed end to end into one sequence with no padding
(``training.inference.prefix_attention.packed``), and projects onto the vocabulary only the positions the loss
reads. The gradients are those of running each full row, up to float rounding
(``tests/training/test_sft.py`` checks it).

One CPU here; several GPUs or nodes through ``accelerate launch`` unchanged (each process takes
its share of every step's rows).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from training import cpu, dev_check, runs
from training.config import SFTConfig
from training.loop import Loop, begin, load_model


def resolve_base(base: str) -> Path:
    if base in ("", "default", "hf:default"):
        from training.inference.base import prepare_default_base

        return prepare_default_base()
    path = Path(base.removeprefix("hf:")).expanduser()
    if not (path / "config.json").is_file():
        from training.inference.model_dir import CheckpointError

        raise CheckpointError(f"--base {base!r}: no config.json there; expected a Hugging Face model directory")
    return path


def batch_loss(model: Any, batch: Any) -> Any:
    """Mean cross-entropy over the batch's label tokens. Each group of rows computes its shared prefix
    once (batch 1), then its rows' suffixes in one packed sequence that attends to that prefix and
    causally to itself."""
    import torch.nn.functional as F

    losses, labels = [], 0
    for group in batch.groups:
        logits, targets = _group_logits(model, group)
        losses.append(F.cross_entropy(logits.float(), targets, reduction="sum"))
        labels += targets.numel()
    return sum(losses) / labels


def _group_logits(model: Any, group: Any) -> tuple[Any, Any]:
    """The logits of the positions whose next token is a label, and those labels."""
    import torch

    from training.inference import prefix_attention

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    body = getattr(causal_lm, causal_lm.base_model_prefix)
    device = group.input_ids.device
    p = group.prefix.shape[1]
    prefix = None
    if p:
        cache = body(input_ids=group.prefix, use_cache=True).cache
        prefix = [(layer.keys[0], layer.values[0]) for layer in cache.layers]
    segments, first = [], 0
    for count in group.counts.tolist():
        segments.append(prefix_attention.Segment(0, first, count, first, first + count))
        first += count
    positions = torch.cat([torch.arange(p, p + s.count, device=device) for s in segments])
    with prefix_attention.packed(causal_lm, prefix, segments):
        hidden = body(
            input_ids=group.input_ids,
            position_ids=positions.unsqueeze(0),
            # A prepared 4D mask is passed through untouched: packed attention needs none.
            attention_mask=torch.ones(1, 1, 1, 1, dtype=torch.bool, device=device),
            use_cache=False,
        ).last_hidden_state[0]
    keep = group.targets != -100
    return causal_lm.get_output_embeddings()(hidden[keep]), group.targets[keep]


def loss_module(model: Any) -> Any:
    """The model wrapped so that its ``forward`` is :func:`batch_loss`: ``accelerate`` (DDP on several
    GPUs) then sees the whole computation go through one module's forward, as it requires."""
    import torch

    class SFTLoss(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, groups: list) -> Any:
            from training.batches import Batch

            return batch_loss(self.model, Batch(groups))

    return SFTLoss(model)


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up, then cosine decay to ``lr_min_ratio`` (a multiplier of ``cfg.lr``)."""
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr_min_ratio + (1 - cfg.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def train(cfg: SFTConfig, examples: list | None = None, data_meta: dict | None = None) -> Path:
    """Fine-tune ``cfg.base`` on gold trajectories (``examples``, else those of ``cfg``); the model lands in
    ``cfg.out``. A finished run of the same options there is reused (nothing trained), one of other options
    refused unless ``cfg.overwrite``; an unfinished one resumes from its newest intact checkpoint
    (``training.runs``)."""
    check_config(cfg)
    cpu.prepare()  # before torch loads: OpenMP reads its wait policy once
    out, config = Path(cfg.out), cfg.to_dict()
    if runs.reuse_finished(out, config, cfg.overwrite):
        return out
    point = runs.resume_point(out, config, cfg.overwrite) if cfg.resume else None

    # The model, the data and each step's batch of it (fixed by the seed, so a resumed run sees the same).
    from training.batches import collate, plan_batches
    from training.dataset import build_examples

    begin(cfg)
    base_dir = resolve_base(cfg.base)
    model, tokenizer = load_model(cfg, base_dir)
    if examples is None:
        runs.say(f"building the training data: the oracle plays {cfg.episodes} train tasks...")
        t_data = time.perf_counter()
        examples, data_meta = build_examples(cfg, tokenizer)
        runs.say(f"{len(examples)} examples in {time.perf_counter() - t_data:.1f} s")
    plan = plan_batches(examples, cfg.batch_size, cfg.steps, cfg.seed)
    checked = dev_check.check_tasks(cfg) if cfg.until_success > 0 else []
    schedule = lambda s: lr_at(s, cfg)
    loop = Loop.prepare(cfg, model, loss_module(model), schedule, (0.9, 0.95), cfg.weight_decay, point)
    start, history = loop.resume(point, model, "openagent train")
    del point  # the checkpoint's tensors, now in the model and optimizer
    meta = {
        "kind": cfg.kind, "base": str(base_dir), "config": config, "data": data_meta or {},
        "examples": len(examples), "bf16": loop.bf16, "seed": cfg.seed,
    }  # fmt: skip

    # The loop: each process takes its share of the step's rows.
    bar = loop.progress_bar(start, f"openagent train {cfg.kind}")
    rank, world = loop.accelerator.process_index, loop.accelerator.num_processes
    loop.module.train()
    t_start, tokens_done, label_done = time.perf_counter(), 0, 0
    for step in range(start, cfg.steps):
        batch = collate([examples[i] for i in plan[step]][rank::world], cfg.share_prefix).to(loop.accelerator.device)
        with loop.accelerator.autocast():
            loss = loop.module(batch.groups)
        loop.accelerator.backward(loss)
        loop.optimizer_step()

        done, elapsed = step + 1, time.perf_counter() - t_start
        tokens_done, label_done = tokens_done + batch.tokens, label_done + batch.label_tokens
        history.append(
            {"step": done, "loss": round(loss.item(), 5), "lr": loop.scheduler.get_last_lr()[0], "tokens": batch.tokens,
             "seconds": round(elapsed, 2)}
        )  # fmt: skip
        if bar is not None:
            bar.set_postfix(loss=f"{loss.item():.4f}", tok_s=f"{tokens_done / elapsed:.0f}")
            bar.update(1)
        if done in cfg.export_at and done != cfg.steps:
            export_meta = {**meta, "steps": done, "history": history, "segments": loop.segments}
            runs.export(model, tokenizer, out / f"step-{done}", export_meta)
        if dev_check.due(cfg, done):
            result = dev_check.check(model, tokenizer, checked, done)
            history[-1]["check"] = result
            runs.say(f"{cfg.kind}: step {done}, dev-split check: {result['solved']}/{result['n']} solved, 95% "
                     f"interval [{result['low']:.3f}, {result['high']:.3f}], target {cfg.until_success}")  # fmt: skip
            if dev_check.reached(result, cfg.until_success):
                runs.say(f"{cfg.kind}: the target is reached at step {done} of {cfg.steps}: stopping here")
                break
        loop.checkpoint(done, model, history, config)
    if bar is not None:
        bar.close()

    elapsed = time.perf_counter() - t_start
    meta.update(
        steps=history[-1]["step"] if history else cfg.steps, history=history, train_seconds=round(elapsed, 1),
        tokens_per_second=round(tokens_done / elapsed, 1) if elapsed and tokens_done else None,
        label_tokens_per_second=round(label_done / elapsed, 1) if elapsed and label_done else None,
    )  # fmt: skip
    return loop.finish(model, tokenizer, meta)


def check_config(cfg: SFTConfig) -> None:
    """Raise :class:`~sandbox.errors.UsageError` on options no run can train with."""
    from sandbox.errors import UsageError

    if not cfg.out:
        raise UsageError("SFTConfig.out: an output directory is required")
    problems = [
        f"{name} must be at least {low}, got {value}"
        for name, value, low in (("steps", cfg.steps, 1), ("batch_size", cfg.batch_size, 1),
                                 ("episodes", cfg.episodes, 1), ("save_every", cfg.save_every, 0),
                                 ("warmup", cfg.warmup, 0), ("check_every", cfg.check_every, 1),
                                 ("check_from", cfg.check_from, 0), ("check_tasks", cfg.check_tasks, 1))
        if value < low
    ]  # fmt: skip
    if not cfg.lr > 0:
        problems.append(f"lr must be positive, got {cfg.lr}")
    if not 0 <= cfg.alpha <= 1:
        problems.append(f"alpha must be in [0, 1], got {cfg.alpha}")
    if not 0 <= cfg.until_success <= 1:
        problems.append(f"until_success must be in [0, 1], got {cfg.until_success}")
    if problems:
        raise UsageError(f"SFTConfig: {'; '.join(problems)}")
