"""What every ``openagent`` command shares for its input and output: whole-number options, and printing that
survives a reader that goes away (``openagent eval ... | head -1``)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``low`` (a bad one exits 2 naming the option)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def port(text: str) -> int:
    """An argparse ``type``: a TCP port, 0 (any free one) to 65535."""
    value = at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text}")
    return value


def say(text: str) -> None:
    """Print ``text`` to stdout; once its reader has gone (``openagent eval ... | head -1``), print nothing more
    and go on: the command's files and exit code do not depend on who reads its output."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        quiet_stdout()


def quiet_stdout() -> None:
    """Send what is left for stdout to the null device: Python would otherwise fail again flushing it at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
