"""What the SFT and RL loops share: the CPU threads, the trainable model, the precision, the accelerator with
its optimizer and schedule, the resume or fresh start, checkpoints on the way, the progress bar, and the export
at the end.

A run decides once what changes its maths: the precision chosen at its first start is recorded in every
checkpoint and kept by a resume (measured again, a near tie could flip it and train another model). Each
start or resume opens a segment, recorded with the run (its checkpoints, then ``openagent-train.json``): the
step it began at, the precision, the CPU threads and how idle threads waited.

One CPU here; several GPUs or nodes through ``accelerate launch`` unchanged: only the main process
writes checkpoints and the final model.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training import cpu, memory, precision, runs
from training.config import TrainConfig
from training.progress import StepProgress


def load_model(cfg: TrainConfig, base_dir: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from ``base_dir``, with LoRA adapters if ``cfg.lora`` (SFT and RL configs)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its bars (loading weights, writing shards) are noise in a run's log
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model.config.use_cache = False
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(cfg.seed)
        lora = LoraConfig(
            r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, task_type="CAUSAL_LM",
            **_lora_targets(model, cfg.lora_layers),
        )  # fmt: skip
        with warnings.catch_warnings():
            # peft asks the model `is_gradient_checkpointing`, which transformers 5 deprecates: noise to a user
            warnings.filterwarnings("ignore", r"`is_gradient_checkpointing` is deprecated", FutureWarning)
            return get_peft_model(model, lora), tokenizer
    return model, tokenizer


def _lora_targets(model: Any, last: int) -> dict[str, Any]:
    """LoRA's targets: every linear layer but the output projection, in the last ``last`` decoder layers
    (0: in all of them). peft takes a layer range only with the module names listed."""
    import torch

    layers = model.config.get_text_config(decoder=True).num_hidden_layers
    if last <= 0 or last >= layers:
        return {"target_modules": "all-linear"}
    output = model.get_output_embeddings()
    names = {
        n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and m is not output
    }
    return {"target_modules": sorted(names), "layers_to_transform": list(range(layers - last, layers))}


def begin(cfg: TrainConfig) -> None:
    """Create ``cfg.out`` and set torch's CPU threads (``training.cpu``), before the model loads; say what was set."""
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    runs.say(cpu.configure(cfg.threads).describe())


def run_precision(cfg: TrainConfig, model: Any, point: runs.Checkpoint | None) -> tuple[bool, str]:
    """``(bf16, why)`` for this run: off if ``cfg.bf16`` is; the precision its checkpoint records if it resumes;
    else chosen here (:func:`training.precision.choose`)."""
    if not cfg.bf16:
        return False, "bf16 is off in the run's options"
    recorded = point.segments[0].get("bf16") if point is not None and point.segments else None
    if point is not None and isinstance(recorded, bool):
        return recorded, f"the run's own, chosen at its start and kept by its checkpoint at step {point.step}"
    bf16, why = precision.choose(model, runs.say)
    if point is not None:
        why += f"; its checkpoint at step {point.step} records no precision (written by an older version)"
    return bf16, why


def new_accelerator(bf16: bool) -> Any:
    """``accelerate``'s ``Accelerator`` for one run, in bf16 mixed precision or none.

    accelerate keeps one state per process and refuses a second precision in it ("restart your
    runtime"); runs of both kinds in one process (a notebook, a test session) are legitimate, so a
    previous run's state of the other precision is dropped (the process group, ``PartialState``, stays).
    """
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    precision = "bf16" if bf16 else "no"
    if AcceleratorState._shared_state.get("_mixed_precision", precision) != precision:
        AcceleratorState._reset_state()
    return Accelerator(mixed_precision=precision, cpu=not torch.cuda.is_available())


@dataclass
class Loop:
    """The accelerator, the optimizer and schedule over the model's trainable parameters, and the loss module
    that ``accelerate`` prepared (under DDP the whole computation must go through one module's forward)."""

    cfg: TrainConfig
    accelerator: Any
    optimizer: Any
    scheduler: Any
    module: Any
    params: list
    bf16: bool
    segments: list[dict] = field(default_factory=list)

    @classmethod
    def prepare(
        cls, cfg: TrainConfig, model: Any, module: Any, schedule: Callable[[int], float], betas: tuple,
        weight_decay: float, point: runs.Checkpoint | None = None,
    ) -> Loop:  # fmt: skip
        """The loop of a run that starts afresh, or resumes from ``point`` (whose precision it keeps)."""
        import torch

        bf16, why = run_precision(cfg, model, point)
        accelerator = new_accelerator(bf16)
        if accelerator.is_main_process:
            runs.say(f"precision {'bf16 autocast' if bf16 else 'fp32'}: {why}")
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=weight_decay, betas=betas)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        module, optimizer = accelerator.prepare(module, optimizer)
        return cls(cfg, accelerator, optimizer, scheduler, module, params, bf16)

    @property
    def main(self) -> bool:
        return self.accelerator.is_main_process

    def resume(self, point: runs.Checkpoint | None, model: Any, label: str) -> tuple[int, list[dict]]:
        """The step to start at and the history so far: ``point`` loaded, or step 0 with older checkpoints cleared
        (they must not outrank this run's own). Opens this start's segment."""
        import torch

        start, history, earlier = 0, [], []
        if point is None:
            if self.main:
                runs.clear_checkpoints(self.cfg.out)
        else:
            start = runs.restore(point, model, self.optimizer, self.scheduler)
            history, earlier = point.history, point.segments
            if self.main:  # stderr: stdout carries only OUT, for scripts
                print(f"{label}: resuming from {point.path} (step {start} of {self.cfg.steps})", file=sys.stderr)
        segment = {"from_step": start, "bf16": self.bf16, "threads": torch.get_num_threads(), "omp_wait": cpu.prepare()}
        self.segments = [*earlier, segment]
        return start, history

    def optimizer_step(self) -> None:
        if self.cfg.grad_clip:
            self.accelerator.clip_grad_norm_(self.params, self.cfg.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

    def checkpoint(self, done: int, model: Any, history: list[dict], config: dict) -> None:
        """A resumable checkpoint after step ``done`` if one is due (not after the last: the export follows)."""
        every = self.cfg.save_every
        if every and done % every == 0 and done != self.cfg.steps and self.main:
            runs.save_checkpoint(
                Path(self.cfg.out), done, model, self.optimizer, self.scheduler, history, config, self.segments
            )

    def finish(self, model: Any, tokenizer: Any, meta: dict) -> Path:
        """The final model exported into ``cfg.out`` (marked finished by its metadata, which gets the run's
        segments and this process's peak memory), checkpoints removed."""
        out = Path(self.cfg.out)
        if self.main:
            runs.export(
                model, tokenizer, out, {**meta, "segments": self.segments, "peak_rss_bytes": memory.peak_rss_bytes()}
            )
            runs.clear_checkpoints(out)
        return out

    def progress_bar(self, start: int, desc: str) -> StepProgress | None:
        if not self.cfg.progress or not self.main:
            return None
        return StepProgress(desc.removeprefix("openagent train "), start, self.cfg.steps, runs.say)
