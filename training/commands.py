"""``openagent train sft|paft`` and ``openagent demo`` (``openagent base`` is in ``training.cli``).

``pytest_openagent/cli.py`` wires each ``configure_*``/``run_*`` pair in as a subcommand. This
module imports nothing heavy at import time (the parser is built for every command); torch and
transformers load inside ``run_*``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from sandbox.errors import UsageError
from training.config import SFTConfig, help_of


def _offline_by_default() -> None:
    # A hub lookup that cannot succeed costs about 25 s; the default base comes from a local package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def configure_train(p: argparse.ArgumentParser) -> None:
    d = SFTConfig()
    p.add_argument(
        "method", choices=["sft", "paft", "rl"],
        help="sft: clean gold trajectories; paft: a share perturbed; rl: GRPO from --init (an SFT checkpoint)",
    )  # fmt: skip
    p.add_argument("--out", required=True, help=help_of(SFTConfig, "out"))
    p.add_argument("--base", default=d.base, help=help_of(SFTConfig, "base"))
    p.add_argument(
        "--steps", type=int, default=None, help=help_of(SFTConfig, "steps") + f" (default {d.steps}; rl: 20)"
    )
    p.add_argument("--batch-size", type=int, default=d.batch_size, help=help_of(SFTConfig, "batch_size"))
    p.add_argument("--episodes", type=int, default=d.episodes, help=help_of(SFTConfig, "episodes"))
    p.add_argument("--lr", type=float, default=None, help=help_of(SFTConfig, "lr") + " (default 1e-3 LoRA, 1e-4 full)")
    p.add_argument("--alpha", type=float, default=0.3, help="PAFT: share of perturbed episodes (default 0.3)")
    p.add_argument("--families", default=",".join(d.families), help=help_of(SFTConfig, "families"))
    p.add_argument("--perturbations", default="", help=help_of(SFTConfig, "perturbations") + ", joined by commas")
    p.add_argument("--lora", action=argparse.BooleanOptionalAction, default=d.lora, help="LoRA (default) or --no-lora")
    p.add_argument("--full", dest="lora", action="store_false", help="full fine-tune (same as --no-lora)")
    p.add_argument("--seed", type=int, default=d.seed, help=help_of(SFTConfig, "seed"))
    p.add_argument("--save-every", type=int, default=None, help=help_of(SFTConfig, "save_every") + " (rl: 5)")
    p.add_argument(
        "--no-resume", dest="resume", action="store_false",
        help="start from step 0, ignoring OUT/checkpoints (a finished run in OUT is still reused or refused)",
    )  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true",
        help="train again into an OUT that holds a finished run (reused if its options are these, else refused) "
        "or checkpoints of other options, and replace it",
    )  # fmt: skip
    p.add_argument("--threads", type=int, default=d.threads, help=help_of(SFTConfig, "threads"))
    from training.rl_cli import add_rl_arguments

    add_rl_arguments(p)


def config_from_args(args: argparse.Namespace) -> SFTConfig:
    if args.method == "paft" and not 0 < args.alpha <= 1:
        raise UsageError(f"--alpha must be in (0, 1] (the share of perturbed episodes), got {args.alpha}")
    lr = args.lr if args.lr is not None else (1e-3 if args.lora else 1e-4)
    return SFTConfig(
        out=args.out, base=args.base, steps=args.steps if args.steps is not None else SFTConfig.steps,
        batch_size=args.batch_size, episodes=args.episodes, lr=lr, lora=args.lora, seed=args.seed,
        save_every=args.save_every if args.save_every is not None else SFTConfig.save_every, resume=args.resume,
        threads=args.threads, alpha=args.alpha if args.method == "paft" else 0.0, overwrite=args.overwrite,
        families=[f for f in args.families.split(",") if f],
        perturbations=[n for n in args.perturbations.split(",") if n],
    )  # fmt: skip


def run_train(args: argparse.Namespace) -> int:
    _offline_by_default()
    if args.method == "rl":
        from training.rl_cli import run_rl

        return run_rl(args)
    from training.sft import train

    cfg = config_from_args(args)
    print(f"openagent train {args.method}: {_describe(cfg)}", file=sys.stderr)
    out = train(cfg)
    print(out)
    return 0


def _describe(cfg: SFTConfig) -> str:
    keys = ("base", "steps", "batch_size", "episodes", "lr", "lora", "alpha", "seed")
    d = dataclasses.asdict(cfg)
    return ", ".join(f"{k}={d[k]}" for k in keys)


def configure_demo(p: argparse.ArgumentParser) -> None:
    from training.demo import DemoConfig, add_arguments

    add_arguments(p, DemoConfig)


def run_demo(args: argparse.Namespace) -> int:
    _offline_by_default()
    from training.demo import config_from_args as demo_config
    from training.demo import run

    return run(demo_config(args))
