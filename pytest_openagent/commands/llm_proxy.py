"""``openagent llm-proxy``: an OpenAI-compatible model server served with faults on the model's side."""

from __future__ import annotations

import argparse
import sys

from pytest_openagent.arguments import EXIT_AGENT_FAILED
from pytest_openagent.console import at_least


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--upstream", required=True, metavar="URL",
                   help="the model server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")  # fmt: skip
    p.add_argument(
        "--fault", action="append", default=[], metavar="NAME[:SEVERITY][@ONSET]",
        help="a model fault to inject (repeat, or join with commas): model_malformed_arguments, model_unknown_tool, "
        "model_truncated_reply, model_empty_reply, model_refusal, model_false_success, model_rate_limited, "
        "model_rate_limited_bare, model_server_error, model_server_error_retry_after; severity 1 (one turn), "
        "2 (two) or 3 (every turn) unless given; @K starts it at the K-th completion of each conversation",
    )  # fmt: skip
    p.add_argument("--seed", type=at_least(0), default=0, help="seed of the faults (default 0)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8766, help="the port to listen on (default 8766)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds an upstream request may take (default 600)")


def run(args: argparse.Namespace) -> int:
    from sandbox.proxy.llm_serve import run_llm_proxy

    try:
        return run_llm_proxy(args.upstream, args.fault, seed=args.seed, host=args.host, port=args.port,
                             timeout=args.timeout)  # fmt: skip
    except ConnectionError as exc:
        print(f"openagent llm-proxy: {exc}", file=sys.stderr)
        return EXIT_AGENT_FAILED
