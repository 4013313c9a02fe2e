"""The training command line: ``openagent base``, ``openagent train sft|paft|rl`` and ``openagent demo``
(``python -m training.rl_demo`` builds its own parser with the same helper).

``pytest_openagent/cli.py`` wires each ``configure_*``/``run_*`` pair in as a subcommand. Every option
comes from a config dataclass through :func:`training.config.add_options`, its help from the field. This
module imports nothing heavy (the parser is built for every ``openagent`` command); torch and
transformers load inside ``run_*``.
"""

from __future__ import annotations

import argparse
import os
import sys

from sandbox.errors import UsageError
from training.config import RLConfig, SFTConfig, add_options, from_options

SHARED = ("out", "steps", "lr", "lora", "seed", "save_every", "resume", "overwrite", "threads")
"""The options of every ``openagent train`` method."""
SFT_OPTIONS = ("base", "batch_size", "episodes", *SHARED)
PAFT_OPTIONS = (*SFT_OPTIONS, "alpha", "families", "perturbations")
RL_OPTIONS = (
    "init", "group", "tasks_per_step", "reward", "tasks", "temperature", "max_new_tokens", "clip", "kl", "perturbed",
    "sft_coef", "sft_batch", "families", *SHARED,
)  # fmt: skip
PAFT_ALPHA = 0.3
"""PAFT's default share of perturbed episodes (the paper's best)."""
LR_WITHOUT_LORA = {"sft": 1e-4, "paft": 1e-4, "rl": 1e-5}


def offline_by_default() -> None:
    # A hub lookup that cannot succeed costs about 25 s; the default base comes from a local package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# --- openagent base --------------------------------------------------------------------------------


def configure_base(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="convert again even if the base is already prepared")


def run_base(args: argparse.Namespace) -> int:
    """Print the default base's directory (converting it on first use); 0. If it is unavailable,
    :class:`~training.inference.base.BaseModelUnavailable` (a usage error) reaches ``openagent``, which exits 2."""
    from training.inference.base import prepare_default_base

    print(prepare_default_base(force=args.force))
    return 0


# --- openagent train sft|paft|rl -------------------------------------------------------------------


def configure_train(p: argparse.ArgumentParser) -> None:
    methods = p.add_subparsers(dest="method", metavar="METHOD", required=True)
    for method, cls, names, about in (
        ("sft", SFTConfig, SFT_OPTIONS, "supervised fine-tuning on clean gold trajectories"),
        ("paft", SFTConfig, PAFT_OPTIONS, "SFT with a share --alpha of perturbed trajectories (train pool)"),
        ("rl", RLConfig, RL_OPTIONS, "GRPO from --init (an SFT checkpoint) on the sandbox's reward"),
    ):
        sub = methods.add_parser(method, help=about, description=about)
        later = {"lr": f"default {cls.lr} with LoRA, {LR_WITHOUT_LORA[method]} with --full"}
        if method == "paft":
            later["alpha"] = f"default {PAFT_ALPHA}"
        add_options(sub, cls, names, chosen_later=later)
        sub.add_argument("--full", dest="lora", action="store_false", help="full fine-tune (same as --no-lora)")


def train_config(args: argparse.Namespace) -> SFTConfig | RLConfig:
    """The config that ``openagent train METHOD`` options ask for; :class:`UsageError` on misuse."""
    if args.method == "rl":
        if not args.init:
            raise UsageError("rl needs --init SFT_DIR (the checkpoint RL starts from, an `openagent train sft` output)")
        return from_options(RLConfig, args, RL_OPTIONS, lr=_lr(args, RLConfig))
    if args.method == "sft":
        return from_options(SFTConfig, args, SFT_OPTIONS, lr=_lr(args, SFTConfig))
    alpha = args.alpha if args.alpha is not None else PAFT_ALPHA
    if not 0 < alpha <= 1:
        raise UsageError(f"--alpha must be in (0, 1] (the share of perturbed episodes), got {alpha}")
    return from_options(SFTConfig, args, PAFT_OPTIONS, lr=_lr(args, SFTConfig), alpha=alpha)


def _lr(args: argparse.Namespace, cls: type) -> float:
    if args.lr is not None:
        return args.lr
    return cls.lr if args.lora else LR_WITHOUT_LORA[args.method]


def run_train(args: argparse.Namespace) -> int:
    offline_by_default()
    cfg = train_config(args)
    if isinstance(cfg, RLConfig):
        from training.rewards import get_reward
        from training.rl import train

        try:
            get_reward(cfg.reward)
        except UsageError as exc:
            raise UsageError(f"--reward: {exc}") from None
        keys = ("init", "steps", "group", "tasks_per_step", "reward", "lr", "lora", "kl", "perturbed", "sft_coef")
    else:
        from training.sft import train

        keys = ("base", "steps", "batch_size", "episodes", "lr", "lora", "alpha")
    shown = ", ".join(f"{k}={getattr(cfg, k)}" for k in (*keys, "seed"))
    print(f"openagent train {args.method}: {shown}", file=sys.stderr)
    print(train(cfg))
    return 0


# --- openagent demo --------------------------------------------------------------------------------


def configure_demo(p: argparse.ArgumentParser) -> None:
    from training.demo import DemoConfig

    add_options(p, DemoConfig)


def run_demo(args: argparse.Namespace) -> int:
    offline_by_default()
    from training.demo import DemoConfig, checked, run

    return run(checked(from_options(DemoConfig, args)))
