"""Supervised fine-tuning: a plain loop on ``accelerate`` that a reader follows top to bottom.

Where the time goes: a POI episode here is about 880 tokens, of which about 620 are the system
prompt and the tool specs, the same in every clean episode, and only about 105 are the
assistant's (the loss). So each step runs each group of rows' common prefix once (batch 1, with
gradients; clean rows form one group, a perturbed row with other tool specs may form its own) and
then only the rows' suffixes, packed end to end into one sequence with no padding
(``training.prefix_attention.packed``), and projects onto the vocabulary only the positions the loss
reads. The gradients are those of running each full row, up to float rounding
(``tests/training/test_sft.py`` checks it).

One CPU here; several GPUs or nodes through ``accelerate launch`` unchanged (each process takes
its share of every step's rows).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from training.config import SFTConfig

META_FILE = "openagent-train.json"
CHECKPOINTS = "checkpoints"
RUN_SETTINGS = frozenset({"out", "progress", "threads", "resume", "save_every"})
"""Config fields that change how a run is carried out, not what it trains."""


def resolve_base(base: str) -> Path:
    if base in ("", "default", "hf:default"):
        from training.base import prepare_default_base

        return prepare_default_base()
    path = Path(base.removeprefix("hf:")).expanduser()
    if not (path / "config.json").is_file():
        raise SystemExit(f"--base {base!r}: no config.json there; expected a Hugging Face model directory")
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

    from training import prefix_attention

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
    """Fine-tune ``cfg.base`` on gold trajectories; the model lands in ``cfg.out``. Resumes if it can."""
    import torch
    from accelerate import Accelerator

    from training.data import collate, plan_batches

    if not cfg.out:
        raise SystemExit("SFTConfig.out: an output directory is required")
    out = Path(cfg.out)
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

    start = 0
    last = latest_checkpoint(out) if cfg.resume else None
    if last is not None:
        refuse_other_config(out, cfg.to_dict())
        start = load_checkpoint(last, model, optimizer, scheduler)
        accelerator.print(f"openagent train: resuming from {last} (step {start} of {cfg.steps})")

    meta = {
        "kind": cfg.kind, "base": str(base_dir), "config": cfg.to_dict(), "data": data_meta or {},
        "examples": len(examples), "bf16": bf16, "seed": cfg.seed,
    }  # fmt: skip
    history: list[dict] = _read_history(last)
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
        if cfg.save_every and done % cfg.save_every == 0 and done != cfg.steps:
            save_checkpoint(out, done, model, optimizer, scheduler, history, cfg.to_dict())
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
        shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
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
    """A plain ``save_pretrained`` directory (LoRA merged in) plus the metadata file, written atomically."""
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
    (tmp / META_FILE).write_text(json.dumps(meta, indent=1, default=str) + "\n")
    if target.exists() and target.resolve() != tmp.resolve():
        # The output directory also holds checkpoints/ and step-N/: replace only what export writes.
        for item in tmp.iterdir():
            os.replace(item, target / item.name)
        tmp.rmdir()
    else:
        os.rename(tmp, target)


def save_checkpoint(
    out: Path, step: int, model: Any, optimizer: Any, scheduler: Any, history: list[dict], config: dict | None = None
) -> Path:
    """Trainable weights, optimizer and schedule at ``step`` (and the run's config, which a resume must
    match), written to a temp dir then renamed."""
    import torch

    root = out / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"step-{step:06d}"
    tmp = root / f".step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    trainable = {n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad}
    torch.save(trainable, tmp / "trainable.pt")
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")
    state = {"step": step, "history": history, "config": config}
    (tmp / "state.json").write_text(json.dumps(state, default=str) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    for old in sorted(root.glob("step-*"))[:-2]:  # keep the last two
        shutil.rmtree(old, ignore_errors=True)
    return target


def latest_checkpoint(out: Path) -> Path | None:
    done = sorted(p for p in (out / CHECKPOINTS).glob("step-*") if (p / "state.json").is_file())
    return done[-1] if done else None


def config_changes(out: Path, config: dict) -> list[str]:
    """What differs between the run whose last checkpoint is in ``out`` and ``config`` (run settings aside);
    empty when there is no checkpoint or it records no config."""
    last = latest_checkpoint(out)
    saved = json.loads((last / "state.json").read_text()).get("config") if last is not None else None
    if saved is None:
        return []
    return _differences(saved, config, ignore={"export_at"})


def finished_run(out: str | Path, config: dict) -> bool:
    """Whether ``out`` holds a finished run (its exported model) of ``config``, run settings aside."""
    meta_file = Path(out) / META_FILE
    if not meta_file.is_file():
        return False
    return not _differences(json.loads(meta_file.read_text()).get("config", {}), config)


def _differences(saved: dict, config: dict, ignore: set[str] = frozenset()) -> list[str]:
    """``"key: saved -> config"`` for each field that differs, run settings and ``ignore`` aside."""
    saved = json.loads(json.dumps(saved, default=str))
    config = json.loads(json.dumps(config, default=str))
    keys = sorted((set(saved) | set(config)) - RUN_SETTINGS - set(ignore))
    return [f"{k}: {saved.get(k)!r} -> {config.get(k)!r}" for k in keys if saved.get(k) != config.get(k)]


def refuse_other_config(out: Path, config: dict) -> None:
    changes = config_changes(out, config)
    if changes:
        raise SystemExit(
            f"openagent train: the checkpoints in {out} were written by a run with other options "
            f"({'; '.join(changes)}). Rerun with the same options to resume it, or pass --no-resume "
            "(or another --out) to start over."
        )


def load_checkpoint(path: Path, model: Any, optimizer: Any, scheduler: Any) -> int:
    import torch

    trainable = torch.load(path / "trainable.pt")
    missing = model.load_state_dict(trainable, strict=False)
    if missing.unexpected_keys:
        raise RuntimeError(f"checkpoint {path} does not match the model: unexpected {missing.unexpected_keys[:3]}")
    state = torch.load(path / "optimizer.pt")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return int(json.loads((path / "state.json").read_text())["step"])


def _read_history(path: Path | None) -> list[dict]:
    if path is None:
        return []
    return list(json.loads((path / "state.json").read_text()).get("history", []))
