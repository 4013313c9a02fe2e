"""The ``openagent`` command. Each subcommand is a :class:`Command` in ``COMMANDS``.

To add one, append a ``Command`` whose ``configure`` adds its arguments and whose ``run`` returns
an exit code; import anything heavy (torch, training) inside ``run`` so ``openagent eval`` stays fast.
Exit codes: 0 ok (the gate PASSed), 1 the gate FAILed, 2 misuse (bad arguments or inputs), 3 the gate
was INCONCLUSIVE (``--inconclusive`` maps it to 1 or 0 instead), 4 no measurement: the agent failed on
most episodes with one cause (a dead server, a bad key).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_openagent.arguments import (  # noqa: F401 - the exit codes are part of this module's face
    EXIT_AGENT_FAILED,
    EXIT_GATE_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
)
from pytest_openagent.commands import check_domain, diff_test, env_serve, evaluate, gate, llm_proxy, mcp_proxy
from pytest_openagent.console import quiet_stdout
from sandbox.errors import MissingExtra, UsageError, install_line

EXIT_BROKEN_PIPE = 141
"""What a shell reports for a command that SIGPIPE ended: one whose output stopped being read mid-way."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _training_command(name: str, about: str) -> Command:
    """A command of the ``train`` extra: ``training.cli``'s ``configure_NAME`` and ``run_NAME``, imported when used."""
    return Command(
        name,
        about,
        lambda p: getattr(_training_cli(), f"configure_{name}")(p),
        lambda args: getattr(_training_cli(), f"run_{name}")(args),
    )


COMMANDS: list[Command] = [
    Command(
        "eval", "evaluate an agent at fixed seeds and print the robustness table", evaluate.configure, evaluate.run
    ),
    Command(
        "check-domain",
        "prove a world: the oracle and the static baseline on every task under every perturbation and severity",
        check_domain.configure,
        check_domain.run,
    ),
    Command("gate", "check a report against a gate or a baseline report", gate.configure, gate.run),
    Command(
        "diff-test",
        "test a release of an MCP server: the change between two tools/list snapshots, applied to its world",
        diff_test.configure,
        diff_test.run,
    ),
    Command(
        "mcp-proxy",
        "serve an MCP server's tools perturbed, over stdio or streamable HTTP, to an agent that speaks MCP",
        mcp_proxy.configure,
        mcp_proxy.run,
    ),
    Command(
        "env-serve",
        "serve a domain's perturbed world as an RL environment (reset, step, verify over HTTP; tools over MCP)",
        env_serve.configure,
        env_serve.run,
    ),
    Command(
        "llm-proxy",
        "serve an OpenAI-compatible model server with faults on the model's side (malformed calls, errors...)",
        llm_proxy.configure,
        llm_proxy.run,
    ),
    _training_command(
        "base",
        "prepare the default base model (SmolLM2-135M-Instruct) and print where it is",
    ),
    _training_command(
        "gguf",
        "write a checkpoint as a GGUF file for llama.cpp's OpenAI-compatible server (docs/serving.md)",
    ),
    _training_command(
        "train",
        "fine-tune an agent on the sandbox: sft, paft (perturbation-augmented) or rl (GRPO)",
    ),
    _training_command(
        "data",
        "write training data as chat JSONL: export (the SFT/PAFT data) or from-report (a report's failures)",
    ),
    _training_command(
        "demo",
        "train SFT, PAFT and RL agents here and print the robustness table beside the base, oracle, static",
    ),
]


def _training_cli():
    try:
        from training import cli
    except ModuleNotFoundError as exc:
        raise MissingExtra(f"this command needs the `train` extra ({exc.name} not installed); install it: "
                           f"{install_line('train')}") from None  # fmt: skip
    return cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openagent", description="Tool-use agent robustness to open-world shifts.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.configure(p)
        p.set_defaults(_command=command, _parser=p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._command.run(args)
    except UsageError as exc:
        args._parser.error(str(exc))  # exits with EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a command that prints with print() whose reader went away: it ended there
        quiet_stdout()
        return EXIT_BROKEN_PIPE
    return EXIT_USAGE  # pragma: no cover - parser.error exits


if __name__ == "__main__":
    sys.exit(main())
