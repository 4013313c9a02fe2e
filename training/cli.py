"""``openagent base``: prepare the default base model and say where it is."""

from __future__ import annotations

import argparse


def configure_base(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="convert again even if the base is already prepared")


def run_base(args: argparse.Namespace) -> int:
    """Print the default base's directory (converting it on first use); 0, or 2 if unavailable."""
    import sys

    from training.base import BaseModelUnavailable, prepare_default_base

    try:
        path = prepare_default_base(force=args.force)
    except BaseModelUnavailable as exc:
        print(f"openagent base: error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
