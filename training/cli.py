"""``openagent base``: prepare the default base model and say where it is."""

from __future__ import annotations

import argparse


def configure_base(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="convert again even if the base is already prepared")


def run_base(args: argparse.Namespace) -> int:
    """Print the default base's directory (converting it on first use); 0. If it is unavailable,
    :class:`~training.inference.base.BaseModelUnavailable` (a usage error) reaches ``openagent``, which exits 2."""
    from training.inference.base import prepare_default_base

    print(prepare_default_base(force=args.force))
    return 0
