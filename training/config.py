"""Training configurations: dataclasses with a help text per field (TRL's ``SFTConfig`` style).

Every field's ``metadata["help"]`` doubles as the command line's help, so the two never drift.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

PERTURBATION_FAMILIES: tuple[str, ...] = ("error_feedback", "symbolic", "semantic")


@dataclass
class SFTConfig:
    """Supervised fine-tuning on the oracle's gold trajectories (loss on assistant tokens only)."""

    out: str = field(
        default="",
        metadata={"help": "output directory: the final model (save_pretrained) and checkpoints/ for resuming"},
    )
    base: str = field(
        default="default", metadata={"help": "base checkpoint directory, or 'default' for SmolLM2-135M-Instruct"}
    )
    domain: str = field(default="poi", metadata={"help": "the sandbox domain whose train split is the data"})
    episodes: int = field(
        default=2000, metadata={"help": "number of distinct training tasks drawn from the train split"}
    )
    steps: int = field(default=200, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=8, metadata={"help": "episodes per optimizer step"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate (LoRA); use about 1e-4 for a full fine-tune"})
    warmup: int = field(default=10, metadata={"help": "linear warm-up steps; then cosine decay to lr_min_ratio × lr"})
    lr_min_ratio: float = field(default=0.1, metadata={"help": "final learning rate as a share of the peak"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    grad_clip: float = field(default=1.0, metadata={"help": "clip the gradient norm to this (0: off)"})
    lora: bool = field(
        default=True, metadata={"help": "train LoRA adapters (peft) on all linear layers; False: full fine-tune"}
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha"})
    max_length: int = field(default=2048, metadata={"help": "drop examples longer than this many tokens"})
    share_prefix: bool = field(
        default=True, metadata={"help": "compute a batch's common prefix (system prompt + tool specs) once per step"}
    )
    bf16: bool = field(default=True, metadata={"help": "bf16 autocast where the hardware supports it"})
    seed: int = field(default=0, metadata={"help": "seed of the task draw, the data order and the LoRA init"})
    save_every: int = field(
        default=50, metadata={"help": "write a resumable checkpoint every N steps (0: only at the end)"}
    )
    export_at: list[int] = field(
        default_factory=list,
        metadata={"help": "also export a full model at these steps, into OUT/step-N (the demo's SFT-N)"},
    )
    resume: bool = field(
        default=True, metadata={"help": "continue from the last intact checkpoint in OUT/checkpoints if there is one"}
    )
    overwrite: bool = field(
        default=False,
        metadata={"help": "train again even if OUT holds a finished run (of these options: reused; of others: "
                  "refused) or checkpoints of other options, and replace it"},
    )  # fmt: skip
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar with loss and throughput"})

    rename_cities: float = field(
        default=0.5,
        metadata={"help": "share of training episodes whose city is renamed to one outside the sandbox "
                  "(teaches copying names, not the train split's eight; 0: off)"},
    )  # fmt: skip

    # PAFT: a share alpha of the episodes is perturbed (train pool only); 0 is plain SFT.
    alpha: float = field(
        default=0.0,
        metadata={"help": "PAFT: share of perturbed episodes in the data (0 = plain SFT; the paper's best is 0.3)"},
    )
    families: list[str] = field(
        default_factory=lambda: list(PERTURBATION_FAMILIES),
        metadata={"help": "PAFT: perturbation families to draw from (error_feedback, symbolic, semantic)"},
    )
    perturbations: list[str] = field(
        default_factory=list, metadata={"help": "PAFT: explicit perturbation names (overrides families)"}
    )

    @property
    def kind(self) -> Literal["sft", "paft"]:
        return "paft" if self.alpha > 0 else "sft"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def help_of(cls: type, name: str) -> str:
    return next(f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.name == name)
