"""``openagent train rl``: GRPO from an SFT checkpoint. Nothing heavy is imported until ``run_rl``.

``add_rl_arguments`` adds the options only RL has to the ``openagent train`` parser (which holds
the ones every method shares: ``--out``, ``--steps``, ``--lr``, ``--lora/--full``, ``--seed``,
``--save-every``, ``--no-resume``, ``--threads``); ``run_rl`` reads both.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from sandbox.errors import UsageError
from training.rl import RLConfig

RL_STEPS, RL_SAVE_EVERY = RLConfig.steps, RLConfig.save_every


def _help(name: str) -> str:
    return next(f.metadata.get("help", "") for f in dataclasses.fields(RLConfig) if f.name == name)


def add_rl_arguments(p: argparse.ArgumentParser) -> None:
    d = RLConfig()
    g = p.add_argument_group("rl (GRPO)")
    g.add_argument("--init", default=None, help="rl: " + _help("init"))
    g.add_argument("--group", type=int, default=d.group, help="rl: " + _help("group"))
    g.add_argument("--tasks-per-step", type=int, default=d.tasks_per_step, help="rl: " + _help("tasks_per_step"))
    g.add_argument("--reward", default=d.reward, help="rl: " + _help("reward"))
    g.add_argument("--tasks", type=int, default=d.tasks, help="rl: " + _help("tasks"))
    g.add_argument("--temperature", type=float, default=d.temperature, help="rl: " + _help("temperature"))
    g.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens, help="rl: " + _help("max_new_tokens"))
    g.add_argument("--clip", type=float, default=d.clip, help="rl: " + _help("clip"))
    g.add_argument("--kl", type=float, default=d.kl, help="rl: " + _help("kl"))
    g.add_argument("--perturbed", type=float, default=d.perturbed, help="rl: " + _help("perturbed"))
    g.add_argument("--sft-coef", type=float, default=d.sft_coef, help="rl: " + _help("sft_coef"))
    g.add_argument("--sft-batch", type=int, default=d.sft_batch, help="rl: " + _help("sft_batch"))


def config_from_args(args: argparse.Namespace) -> RLConfig:
    if not args.init:
        raise UsageError("rl needs --init SFT_DIR (the checkpoint RL starts from, an `openagent train sft` output)")
    lr = args.lr if getattr(args, "lr", None) is not None else (RLConfig.lr if args.lora else 1e-5)
    steps = getattr(args, "steps", None)
    save_every = getattr(args, "save_every", None)
    return RLConfig(
        out=args.out, init=args.init, steps=steps if steps is not None else RL_STEPS, group=args.group,
        tasks_per_step=args.tasks_per_step, reward=args.reward, tasks=args.tasks, temperature=args.temperature,
        max_new_tokens=args.max_new_tokens, clip=args.clip, kl=args.kl, perturbed=args.perturbed,
        sft_coef=args.sft_coef, sft_batch=args.sft_batch, lr=lr, lora=args.lora, seed=args.seed,
        save_every=save_every if save_every is not None else RL_SAVE_EVERY, resume=args.resume, threads=args.threads,
        overwrite=getattr(args, "overwrite", False),
    )  # fmt: skip


def run_rl(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from training.rewards import get_reward
    from training.rl import train

    cfg = config_from_args(args)
    try:
        get_reward(cfg.reward)
    except UsageError as exc:
        raise UsageError(f"--reward: {exc}") from None
    keys = ("init", "steps", "group", "tasks_per_step", "reward", "lr", "lora", "kl", "perturbed", "sft_coef", "seed")
    print(f"openagent train rl: {', '.join(f'{k}={getattr(cfg, k)}' for k in keys)}", file=sys.stderr)
    print(train(cfg))
    return 0
