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

import copy
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from training.config import SFTConfig
from training.runs import (  # noqa: F401  (re-exported: the names RL, the demo and users reach through here)
    CHECKPOINTS,
    META_FILE,
    RUN_SETTINGS,
    clear_checkpoints,
    config_changes,
    finished_run,
    latest_checkpoint,
    restore,
    resume_point,
    reuse_finished,
    save_checkpoint,
    sync_tree,
    write_json,
)


def resolve_base(base: str) -> Path:
    if base in ("", "default", "hf:default"):
        from training.inference.base import prepare_default_base

        return prepare_default_base()
    path = Path(base.removeprefix("hf:")).expanduser()
    if not (path / "config.json").is_file():
        from training.checkpoint import CheckpointError

        raise CheckpointError(f"--base {base!r}: no config.json there; expected a Hugging Face model directory")
    return path


def batch_loss(model: Any, batch: Any) -> Any:
    """Mean cross-entropy over the batch's label tokens. Each group of rows computes its shared prefix
    once (batch 1), then its rows' suffixes in one packed sequence that attends to that prefix and
    causally to itself."""
    import torch.nn.functional as F

    total, labels = 0, 0
    for group in batch.groups:
        logits, targets = _group_logits(model, group)
        total = total + F.cross_entropy(logits.float(), targets, reduction="sum")
        labels += targets.numel()
    return total / labels


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
            from training.data import Batch

            return batch_loss(self.model, Batch(groups))

    return SFTLoss(model)


def load_model(cfg: Any, base_dir: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from ``base_dir``, with LoRA adapters if ``cfg.lora`` (SFT and RL configs)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model.config.use_cache = False
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(cfg.seed)
        lora = LoraConfig(
            r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules="all-linear",
            task_type="CAUSAL_LM",
        )  # fmt: skip
        model = get_peft_model(model, lora)
    return model, tokenizer


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up, then cosine decay to ``lr_min_ratio`` (a multiplier of ``cfg.lr``)."""
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr_min_ratio + (1 - cfg.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def train(cfg: SFTConfig, examples: list | None = None, data_meta: dict | None = None) -> Path:
    """Fine-tune ``cfg.base`` on gold trajectories; the model lands in ``cfg.out``.

    A finished run of the same options in ``cfg.out`` is reused (nothing trained), one of other options refused
    unless ``cfg.overwrite``; an unfinished one resumes from its newest intact checkpoint (``training.runs``)."""
    from sandbox.errors import UsageError

    if not cfg.out:
        raise UsageError("SFTConfig.out: an output directory is required")
    check_config(cfg)
    out = Path(cfg.out)
    config = cfg.to_dict()
    if reuse_finished(out, config, cfg.overwrite):
        return out
    point = resume_point(out, config, cfg.overwrite) if cfg.resume else None

    import torch
    from accelerate import Accelerator

    from training.data import collate, plan_batches

    out.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    base_dir = resolve_base(cfg.base)
    model, tokenizer = load_model(cfg, base_dir)
    if examples is None:
        from training.paft import build_examples

        examples, data_meta = build_examples(cfg, tokenizer)
    plan = plan_batches(examples, cfg.batch_size, cfg.steps, cfg.seed)

    bf16 = cfg.bf16 and _bf16_ok()
    accelerator = Accelerator(mixed_precision="bf16" if bf16 else "no", cpu=not torch.cuda.is_available())
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, cfg))
    wrapped, optimizer = accelerator.prepare(loss_module(model), optimizer)

    start, history = 0, []
    if point is not None:
        start, history = restore(point, model, optimizer, scheduler), point.history
        if accelerator.is_main_process:  # stderr: stdout carries only OUT, for scripts
            print(f"openagent train: resuming from {point.path} (step {start} of {cfg.steps})", file=sys.stderr)
        del point
    elif accelerator.is_main_process:
        clear_checkpoints(out)  # a fresh start: an older run's checkpoints must not outrank its own

    meta = {
        "kind": cfg.kind, "base": str(base_dir), "config": cfg.to_dict(), "data": data_meta or {},
        "examples": len(examples), "bf16": bf16, "seed": cfg.seed,
    }  # fmt: skip
    bar = _progress(cfg, accelerator, start)
    rank, world = accelerator.process_index, accelerator.num_processes
    wrapped.train()
    t_start, tokens_done, label_done = time.perf_counter(), 0, 0
    for step in range(start, cfg.steps):
        rows = [examples[i] for i in plan[step]][rank::world]
        batch = collate(rows, cfg.share_prefix)
        batch.to(accelerator.device)
        with accelerator.autocast():
            loss = wrapped(batch.groups)
        accelerator.backward(loss)
        if cfg.grad_clip:
            accelerator.clip_grad_norm_(params, cfg.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)

        tokens_done += batch.tokens
        label_done += batch.label_tokens
        elapsed = time.perf_counter() - t_start
        history.append(
            {"step": step + 1, "loss": round(loss.item(), 5), "lr": scheduler.get_last_lr()[0], "tokens": batch.tokens,
             "seconds": round(elapsed, 2)}
        )  # fmt: skip
        if bar is not None:
            bar.set_postfix(loss=f"{loss.item():.4f}", tok_s=f"{tokens_done / elapsed:.0f}")
            bar.update(1)
        done = step + 1
        if done in cfg.export_at and done != cfg.steps:
            snapshot = {**meta, "steps": done, "history": history}
            export(model, tokenizer, out / f"step-{done}", snapshot)
        if cfg.save_every and done % cfg.save_every == 0 and done != cfg.steps and accelerator.is_main_process:
            save_checkpoint(out, done, model, optimizer, scheduler, history, config)
    if bar is not None:
        bar.close()

    elapsed = time.perf_counter() - t_start
    meta.update(
        steps=cfg.steps, history=history, train_seconds=round(elapsed, 1),
        tokens_per_second=round(tokens_done / elapsed, 1) if elapsed and tokens_done else None,
        label_tokens_per_second=round(label_done / elapsed, 1) if elapsed and label_done else None,
    )  # fmt: skip
    if accelerator.is_main_process:
        export(model, tokenizer, out, meta)
        clear_checkpoints(out)
    return out


def _bf16_ok() -> bool:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    capability = torch.backends.cpu.get_cpu_capability()
    return capability in ("AVX512", "AVX512_BF16", "AMX") or "AVX512" in capability


def _progress(cfg: SFTConfig, accelerator: Any, start: int) -> Any:
    if not cfg.progress or not accelerator.is_main_process:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=cfg.steps, initial=start, desc=f"openagent train {cfg.kind}", unit="step", file=sys.stderr)


def export(model: Any, tokenizer: Any, target: Path, meta: dict) -> None:
    """A plain ``save_pretrained`` directory (LoRA merged in) plus the metadata file, written atomically: into a
    temp folder, then renamed (or, into an existing ``target``, each file replaced, the metadata file last, so
    that ``target`` never looks finished with half a model)."""
    plain = model
    if hasattr(model, "merge_and_unload"):
        plain = copy.deepcopy(model).merge_and_unload()
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    plain.config.use_cache = True
    plain.save_pretrained(tmp)
    plain.config.use_cache = False
    tokenizer.save_pretrained(tmp)
    write_json(tmp / META_FILE, meta)
    sync_tree(tmp)
    if target.exists() and target.resolve() != tmp.resolve():
        # The output directory also holds checkpoints/ and step-N/: replace only what export writes.
        (target / META_FILE).unlink(missing_ok=True)
        for item in sorted(tmp.iterdir(), key=lambda p: p.name == META_FILE):
            os.replace(item, target / item.name)
        tmp.rmdir()
    else:
        os.rename(tmp, target)


def check_config(cfg: SFTConfig) -> None:
    """Raise :class:`~sandbox.errors.UsageError` on options no run can train with."""
    from sandbox.errors import UsageError

    problems = [
        f"{name} must be at least {low}, got {value}"
        for name, value, low in (("steps", cfg.steps, 1), ("batch_size", cfg.batch_size, 1),
                                 ("episodes", cfg.episodes, 1), ("save_every", cfg.save_every, 0),
                                 ("warmup", cfg.warmup, 0))
        if value < low
    ]  # fmt: skip
    if not cfg.lr > 0:
        problems.append(f"lr must be positive, got {cfg.lr}")
    if not 0 <= cfg.alpha <= 1:
        problems.append(f"alpha must be in [0, 1], got {cfg.alpha}")
    if problems:
        raise UsageError(f"SFTConfig: {'; '.join(problems)}")
