"""Training configurations: dataclasses with a help text per field (TRL's ``SFTConfig`` style), and the one
helper that turns a config's fields into command-line options.

Every field's ``metadata["help"]`` is also its option's help, so the two never drift. :class:`TrainConfig`
holds the fields every training run has (SFT, PAFT, RL); :class:`SFTConfig` and :class:`RLConfig` add their
own and change a few defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from sandbox.errors import UsageError

PERTURBATION_FAMILIES: tuple[str, ...] = ("error_feedback", "symbolic", "semantic")


@dataclass
class TrainConfig:
    """What every training run has: where it goes, how it optimises, how it checkpoints."""

    out: str = field(
        default="",
        metadata={"help": "output directory: the final model (save_pretrained) and checkpoints/ for resuming"},
    )
    domain: str = field(default="poi", metadata={"help": "the sandbox domain whose train split gives the tasks"})
    steps: int = field(default=200, metadata={"help": "optimizer steps"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate (LoRA); use about 1e-4 for a full fine-tune"})
    warmup: int = field(default=10, metadata={"help": "linear warm-up steps"})
    grad_clip: float = field(default=1.0, metadata={"help": "clip the gradient norm to this (0: off)"})
    lora: bool = field(
        default=True, metadata={"help": "train LoRA adapters (peft) on all linear layers; False: full fine-tune"}
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha"})
    lora_layers: int = field(
        default=0,
        metadata={"help": "LoRA on the last N decoder layers only (0: all): the backward pass then stops below "
                  "them, so a step costs less"},
    )  # fmt: skip
    bf16: bool = field(
        default=True,
        metadata={"help": "bf16 autocast where the hardware computes in it and, on a CPU, a training pass is "
                  "measured faster in it than in fp32"},
    )  # fmt: skip
    seed: int = field(default=0, metadata={"help": "seed of the task draw, the data order or sampling, the LoRA init"})
    save_every: int = field(
        default=50, metadata={"help": "write a resumable checkpoint every N steps (0: only at the end)"}
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
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    families: list[str] = field(
        default_factory=lambda: list(PERTURBATION_FAMILIES),
        metadata={
            "help": "perturbation families to draw from (error_feedback, symbolic, semantic)",
            "flag": "--perturbation-families",  # --families is task families in `openagent eval`
            "was": "--families",
        },
    )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class SFTConfig(TrainConfig):
    """Supervised fine-tuning on the oracle's gold trajectories (loss on assistant tokens only)."""

    base: str = field(
        default="default", metadata={"help": "base checkpoint directory, or 'default' for SmolLM2-135M-Instruct"}
    )
    episodes: int = field(
        default=2000, metadata={"help": "number of distinct training tasks drawn from the train split"}
    )
    task_families: list[str] = field(
        default_factory=list, metadata={"help": "train on tasks of these task families only (default: all)"}
    )
    batch_size: int = field(default=8, metadata={"help": "episodes per optimizer step"})
    lr_min_ratio: float = field(
        default=0.1, metadata={"help": "after warm-up, cosine decay to this share of the peak learning rate"}
    )
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    max_length: int = field(default=2048, metadata={"help": "drop examples longer than this many tokens"})
    share_prefix: bool = field(
        default=True, metadata={"help": "compute a batch's common prefix (system prompt + tool specs) once per step"}
    )
    export_at: list[int] = field(
        default_factory=list,
        metadata={"help": "also export a full model at these steps, into OUT/step-N (the demo's SFT-N)"},
    )
    until_success: float = field(
        default=0.0,
        metadata={"help": "stop before STEPS once the model in training solves dev-split tasks of its task families "
                  "at this rate, judged as a gate judges: by the lower bound of the 95 percent interval (0: train "
                  "every step)"},
    )  # fmt: skip
    check_every: int = field(default=10, metadata={"help": "steps between two checks of --until-success"})
    check_from: int = field(default=0, metadata={"help": "the step of the first check (0: --check-every)"})
    check_tasks: int = field(default=20, metadata={"help": "dev-split tasks a check plays (greedy, clean)"})
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
    perturbations: list[str] = field(
        default_factory=list, metadata={"help": "PAFT: explicit perturbation names (overrides families)"}
    )
    rows: str = field(
        default="",
        metadata={"help": "PAFT: also train on the chat rows of this JSONL file (`openagent data from-report` "
                  "writes them from a report's failures), mixed into the episodes"},
    )  # fmt: skip

    @property
    def kind(self) -> Literal["sft", "paft"]:
        return "paft" if self.alpha > 0 or self.rows else "sft"


@dataclass
class RLConfig(TrainConfig):
    """GRPO from a fine-tuned checkpoint on the sandbox's train split."""

    steps: int = field(default=20, metadata={"help": "RL steps (one rollout batch and one optimizer step each)"})
    lr: float = field(default=2e-4, metadata={"help": "learning rate (LoRA); use about 1e-5 for a full fine-tune"})
    bf16: bool = field(
        default=False,
        metadata={"help": "bf16 autocast where the hardware computes in it and a training pass is measured faster "
                  "in it; off for RL, whose updates collapsed under it where the same run in fp32 did not "
                  "(docs/experiments.md)"},
    )  # fmt: skip
    warmup: int = field(default=2, metadata={"help": "linear warm-up steps, then constant"})
    save_every: int = field(default=5, metadata={"help": "write a resumable checkpoint every N steps (0: end only)"})
    init: str = field(default="", metadata={"help": "the checkpoint to start from (an SFT output directory)"})
    tasks: int = field(
        default=1000,
        metadata={
            "help": "distinct train tasks of the run; each epoch visits every one once",
            "flag": "--train-tasks",  # --tasks is an MCP server's tasks file in `openagent eval`
            "was": "--tasks",
        },
    )
    group: int = field(default=8, metadata={"help": "G: sampled episodes per task, whose rewards are compared"})
    tasks_per_step: int = field(default=4, metadata={"help": "tasks per step; a step runs tasks_per_step × G episodes"})
    reward: str = field(
        default="completion",
        metadata={"help": "completion (success only), refusal-aware (also credits refusing the unsolvable), "
                  "or module:function"},
    )  # fmt: skip
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature of the rollouts"})
    top_k: int = field(default=0, metadata={"help": "sample among the k likeliest tokens (0: all)"})
    max_new_tokens: int = field(default=128, metadata={"help": "longest reply per turn, in tokens"})
    max_turns: int = field(
        default=6, metadata={"help": "cap on an episode's turns (a case's own budget if lower): loops cost the most"}
    )
    iterations: int = field(
        default=1,
        metadata={"help": "μ: optimizer steps on each step's rollouts (TRL's num_iterations); past the first, the "
                  "probability ratio moves off 1 and the clip range bounds it"},
    )  # fmt: skip
    clip: float = field(default=0.2, metadata={"help": "PPO clip range ε of the probability ratio"})
    kl: float = field(default=0.0, metadata={"help": "weight β of the KL term to the initial policy (0: off)"})
    loss_norm: str = field(
        default="token",
        metadata={"help": "the policy loss's mean: token (every generated token counts once) or sequence (every "
                  "episode's reply tokens count once together, whatever their number)"},
    )  # fmt: skip
    micro_batch: int = field(default=4, metadata={"help": "rows per forward/backward pass (memory, not maths)"})
    perturbed: float = field(
        default=0.0,
        metadata={"help": "share of rollout tasks with a train-pool perturbation (perturbation-augmented RL)"},
    )
    sft_coef: float = field(
        default=0.0,
        metadata={"help": "weight γ of a supervised loss on --init's own SFT data in every step (InstructGPT's "
                  "PPO-ptx): holds the tasks the policy already solves, which give GRPO no signal (0: off)"},
    )  # fmt: skip
    sft_batch: int = field(default=8, metadata={"help": "gold episodes of that supervised loss per step"})
    engine: str = field(
        default="own",
        metadata={"help": "what runs the GRPO update: own (our loop) or trl (TRL's GRPOTrainer, the same rollouts and "
                  "reward; the documented path on GPUs); benchmarks/bench_rl_engines.py compares them"},
    )  # fmt: skip


# --- configs as command-line options ---------------------------------------------------------------


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if not callable(f.default_factory):
        raise TypeError(f"option {f.name} has no default")
    return f.default_factory()


def _fields(cls: type, names: typing.Iterable[str] | None) -> list[dataclasses.Field]:
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    return list(by_name.values()) if names is None else [by_name[n] for n in names]


def add_options(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    names: typing.Iterable[str] | None = None,
    chosen_later: dict[str, str] | None = None,
) -> None:
    """One option per field of the dataclass ``cls`` (those in ``names``, else all), its help the field's
    ``metadata["help"]``: ``--batch-size N`` for ``batch_size``; a list as values joined by commas; a flag
    that is off by default as ``--flag``, one that is on as ``--flag/--no-flag``. ``chosen_later`` maps a
    field to a note on the default the command chooses (the option's default is then ``None``)."""
    chosen_later = chosen_later or {}
    for f in _fields(cls, names):
        flag = option_flag(f)
        help_text = f.metadata.get("help", "")
        default = _default(f)
        if f.name in chosen_later:
            kind = typing.get_type_hints(cls)[f.name]
            p.add_argument(flag, dest=f.name, type=kind, default=None, help=f"{help_text} ({chosen_later[f.name]})")
        elif isinstance(default, bool):
            action = argparse.BooleanOptionalAction if default else "store_true"
            p.add_argument(flag, dest=f.name, action=action, default=default, help=help_text)
        elif isinstance(default, list):
            joined = ",".join(map(str, default))
            shown = f" (default {joined})" if joined else ""
            p.add_argument(flag, dest=f.name, default=joined, help=f"{help_text}, joined by commas{shown}")
        else:
            shown = f" (default {default!r})" if isinstance(default, str) and default else ""
            shown = f" (default {default})" if not isinstance(default, str) and default != 0 else shown
            p.add_argument(flag, dest=f.name, type=type(default), default=default, help=help_text + shown)
        if "was" in f.metadata:
            p.add_argument(f.metadata["was"], action=_Renamed, renamed=flag, nargs="?", help=argparse.SUPPRESS)


def option_flag(f: dataclasses.Field) -> str:
    """The option of a config field: ``--batch-size`` for ``batch_size``, unless its metadata names another."""
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


class _Renamed(argparse.Action):
    """An option's former spelling, which :func:`from_options` turns into a usage error naming the new one."""

    def __init__(self, *args: Any, renamed: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.renamed = renamed

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: Any) -> None:
        namespace.renamed_option = f"{self.option_strings[0]} is now {self.renamed}"


def from_options(cls: type, args: argparse.Namespace, names: typing.Iterable[str] | None = None, **fixed: Any) -> Any:
    """The ``cls`` that ``args`` asks for: the fields in ``names`` (else all) read back from the options that
    :func:`add_options` made, the others at their defaults, ``fixed`` over both. An option left at ``None``
    (see ``chosen_later``) keeps the field's default unless ``fixed`` gives it."""
    if getattr(args, "renamed_option", None):
        raise UsageError(args.renamed_option)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in _fields(cls, names):
        value = getattr(args, f.name)
        if value is None:
            continue
        if isinstance(_default(f), list) and isinstance(value, str):
            (item,) = typing.get_args(hints[f.name])
            value = _split(value, item, option_flag(f), f.metadata.get("items", f"{item.__name__}s"))
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:  # counts, rates, seeds
            raise UsageError(f"{option_flag(f)} {value}: must be 0 or more ({f.metadata.get('help', f.name)})")
        values[f.name] = value
    return cls(**{**values, **fixed})


def _split(text: str, item: type, flag: str, items: str) -> list[Any]:
    try:
        return [item(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected {items} joined by commas") from None
