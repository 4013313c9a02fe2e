"""The training command line: ``openagent base``, ``openagent gguf``, ``openagent train sft|paft|rl|rl-demo``,
``openagent data export|from-report`` and ``openagent demo``.

``pytest_openagent/cli.py`` wires each ``configure_*``/``run_*`` pair in as a subcommand. Every option
comes from a config dataclass through :func:`training.config.add_options`, its help from the field. This
module imports nothing heavy (the parser is built for every ``openagent`` command); torch and
transformers load inside ``run_*``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

from sandbox.errors import UsageError
from training.config import RLConfig, SFTConfig, add_options, from_options

SHARED = ("out", "steps", "lr", "lora", "bf16", "seed", "save_every", "resume", "overwrite", "threads")
"""The options of every ``openagent train`` method."""
SFT_OPTIONS = ("base", "batch_size", "episodes", *SHARED)
PAFT_DATA = ("alpha", "families", "perturbations", "rows")
"""What PAFT adds to SFT's options, all of them about its data."""
PAFT_OPTIONS = (*SFT_OPTIONS, *PAFT_DATA)
DATA_OPTIONS = {"sft": ("episodes", "seed"), "paft": ("episodes", "seed", *PAFT_DATA)}
"""The options of ``openagent train sft|paft`` that decide its data: ``openagent data export`` takes these."""
RL_OPTIONS = (
    "init", "group", "tasks_per_step", "reward", "tasks", "temperature", "max_new_tokens", "iterations", "clip", "kl",
    "loss_norm", "perturbed", "sft_coef", "sft_batch", "families", "engine", *SHARED,
)  # fmt: skip
PAFT_ALPHA = 0.3
"""PAFT's default share of perturbed episodes (the paper's best)."""
LR_WITHOUT_LORA = {"sft": 1e-4, "paft": 1e-4, "rl": 1e-5}


def prepare_process() -> None:
    """The environment a training command runs in, set before anything loads torch."""
    # A hub lookup that cannot succeed costs about 25 s; the default base comes from a local package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # transformers' and the hub's own bars (loading weights, writing shards) say nothing a user acts on
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from training import cpu

    cpu.prepare()  # OpenMP's wait policy, read once when torch loads


# --- openagent base --------------------------------------------------------------------------------


def configure_base(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="convert again even if the base is already prepared")


def run_base(args: argparse.Namespace) -> int:
    """Print the default base's directory (converting it on first use); 0. If it is unavailable,
    :class:`~training.inference.base.BaseModelUnavailable` (a usage error) reaches ``openagent``, which exits 2."""
    _require_train("openagent base")
    from training.inference.base import prepare_default_base

    print(prepare_default_base(force=args.force))
    return 0


def _require_train(what: str) -> None:
    """One line naming the ``train`` extra and its install command, before anything imports torch."""
    from sandbox.errors import require_extra
    from training.agent_kind import TRAIN_MODULES

    require_extra("train", (*TRAIN_MODULES, "peft", "accelerate"), what)


# --- openagent gguf --------------------------------------------------------------------------------


def configure_gguf(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="a checkpoint directory (or hf:PATH, or 'default' for the base)")
    p.add_argument("out", help="the GGUF file to write (llama.cpp serves it: docs/serving.md)")
    p.add_argument("--dtype", choices=("f32", "f16"), default="f32", help="f32 (exact, default) or f16 (half size)")


def run_gguf(args: argparse.Namespace) -> int:
    _require_train("openagent gguf")
    """Write the checkpoint as GGUF and print the file's path; 0. A checkpoint the exporter cannot write is a
    :class:`~training.gguf_export.NotExportable` (a usage error: ``openagent`` exits 2 with the reason)."""
    from sandbox.files import check_output_file
    from training.gguf_export import write_gguf

    out = check_output_file(Path(args.out), "the GGUF file")
    print(write_gguf(args.checkpoint, out, args.dtype))
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
    from training.rl_demo import RLDemoConfig

    about = (
        "the RL experiment: the demo's two GRPO agents (completion and refusal-aware rewards) from one SFT "
        "checkpoint, measured against it on the held-out test split (clean success, tier-4 refusal, reward curves)"
    )
    add_options(methods.add_parser("rl-demo", help=about, description=about), RLDemoConfig)


def train_config(args: argparse.Namespace) -> SFTConfig | RLConfig:
    """The config that ``openagent train METHOD`` options ask for; :class:`UsageError` on misuse."""
    if args.method == "rl":
        if not args.init:
            raise UsageError("rl needs --init SFT_DIR (the checkpoint RL starts from, an `openagent train sft` output)")
        return from_options(RLConfig, args, RL_OPTIONS, lr=_lr(args, RLConfig))
    if args.method == "sft":
        return from_options(SFTConfig, args, SFT_OPTIONS, lr=_lr(args, SFTConfig))
    return from_options(SFTConfig, args, PAFT_OPTIONS, lr=_lr(args, SFTConfig), alpha=_paft_alpha(args))


def _paft_alpha(args: argparse.Namespace) -> float:
    alpha = args.alpha if args.alpha is not None else PAFT_ALPHA
    if not 0 < alpha <= 1:
        raise UsageError(f"--alpha must be in (0, 1] (the share of perturbed episodes), got {alpha}")
    return alpha


def _lr(args: argparse.Namespace, cls: type[SFTConfig] | type[RLConfig]) -> float:
    if args.lr is not None:
        return args.lr
    return cls.lr if args.lora else LR_WITHOUT_LORA[args.method]


def run_train(args: argparse.Namespace) -> int:
    _require_train(f"openagent train {args.method}")
    prepare_process()
    if args.method == "rl-demo":
        from training.rl_demo import RLDemoConfig, run

        return run(from_options(RLDemoConfig, args))
    cfg = train_config(args)
    from sandbox.files import check_output_folder

    check_output_folder(Path(cfg.out), "the run (--out)")
    keys: tuple[str, ...]
    if isinstance(cfg, RLConfig):
        from training.rewards import get_reward
        from training.rl import train as train_rl

        try:
            get_reward(cfg.reward)
        except UsageError as exc:
            raise UsageError(f"--reward: {exc}") from None
        keys = (
            "init",
            "engine",
            "steps",
            "group",
            "tasks_per_step",
            "reward",
            "lr",
            "lora",
            "kl",
            "perturbed",
            "sft_coef",
        )
        start = functools.partial(train_rl, cfg)
    else:
        from training.sft import train as train_sft

        keys = ("base", "steps", "batch_size", "episodes", "lr", "lora", "alpha")
        start = functools.partial(train_sft, cfg)
    shown = ", ".join(f"{k}={getattr(cfg, k)}" for k in (*keys, "seed"))
    print(f"openagent train {args.method}: {shown}", file=sys.stderr)
    print(start())
    return 0


# --- openagent data export|from-report --------------------------------------------------------------


def configure_data(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    about = "write the gold trajectories an SFT or PAFT run trains on as chat JSONL (messages + tools)"
    export = actions.add_parser("export", help=about, description=about)
    methods = export.add_subparsers(dest="method", metavar="METHOD", required=True)
    for method, what in (("sft", "clean gold trajectories"), ("paft", "clean and perturbed (train pool) ones")):
        sub = methods.add_parser(method, help=what, description=f"{about}: {what}")
        _out_file(sub)
        later = {"alpha": f"default {PAFT_ALPHA}"} if method == "paft" else None
        add_options(sub, SFTConfig, DATA_OPTIONS[method], chosen_later=later)
    about = "turn a report's failing cases into PAFT rows: the oracle on train-split twins, train-pool texts"
    report = actions.add_parser("from-report", help=about, description=about)
    report.add_argument("report", help="a report JSON (from --openagent-report or openagent eval --json)")
    _out_file(report)
    report.add_argument(
        "--per-failure", type=int, default=2, help="train cases drawn for each failing case (default 2)"
    )
    report.add_argument("--seed", type=int, default=0, help="seed of the train tasks and perturbation seeds drawn")
    report.add_argument(
        "--domain", action="append", default=[], metavar="SPEC",
        help="a domain to load first (repeatable): a name, or module:attribute naming a sandbox.Domain (a user's "
        "domain: the spec its run used). A report's own module:attribute domain is imported only if named here",
    )  # fmt: skip


def _out_file(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="FILE", help="the JSONL file to write (atomically)")


def run_data(args: argparse.Namespace) -> int:
    """Write the JSONL and print a summary of it; 0."""
    import json
    from pathlib import Path

    from sandbox.files import check_output_file

    check_output_file(Path(args.out), "the JSONL (--out)")
    if args.action == "export":
        from training.export import export

        alpha = _paft_alpha(args) if args.method == "paft" else 0.0
        cfg = from_options(SFTConfig, args, DATA_OPTIONS[args.method], alpha=alpha)
        if cfg.episodes < 1:
            raise UsageError(f"--episodes must be at least 1 (the training tasks to export), got {cfg.episodes}")
        summary = export(cfg, args.out)
        print(f"openagent data export {args.method}: {summary['rows']} rows written to {args.out}", file=sys.stderr)
    else:
        from training.from_report import REASONS, from_report

        summary = from_report(args.report, args.out, args.per_failure, args.seed, args.domain)
        print(
            f"openagent data from-report: {summary['failures']} failing cases of {summary['records']} records; "
            f"{summary['rows']} rows from {summary['failures_with_rows']} of them written to {args.out}",
            file=sys.stderr,
        )
        if summary["domain_from_report"]:
            print(
                f"  {summary['domain_from_report']} failing records name no domain (a report written before records "
                f"kept theirs): the report's domain ({summary['report_domain'] or 'every one known here'}) was "
                f"used for them",
                file=sys.stderr,
            )
        for reason, count in summary["skipped"].items():
            print(f"  {count} skipped: {REASONS[reason]}", file=sys.stderr)
        if summary["cases_failed_by_oracle"]:
            print(
                f"  {summary['cases_failed_by_oracle']} train cases left out: the oracle failed them", file=sys.stderr
            )
    print(json.dumps(summary, sort_keys=True))
    return 0


# --- openagent demo --------------------------------------------------------------------------------


def configure_demo(p: argparse.ArgumentParser) -> None:
    from training.demo import DemoConfig

    add_options(p, DemoConfig)


def run_demo(args: argparse.Namespace) -> int:
    _require_train("openagent demo")
    prepare_process()
    from training.demo import DemoConfig, checked
    from training.demo_run import run

    return run(checked(from_options(DemoConfig, args)))
