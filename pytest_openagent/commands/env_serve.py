"""``openagent env-serve DOMAIN``: a domain's perturbed world as an RL environment server (OpenEnv's HTTP shape,
the tools over MCP, one episode a session; docs/training-at-scale.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_openagent.console import at_least

if TYPE_CHECKING:
    from starlette.applications import Starlette


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("domain", help="the domain whose train split it serves: a name, or module:attribute")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="the port to listen on (default 8000)")
    p.add_argument(
        "--reward", default="completion",
        help="what /verify pays for the judge's outcome: completion, refusal-aware or module:function (default "
        "completion)",
    )  # fmt: skip
    p.add_argument("--max-sessions", type=at_least(1), default=1024, help="sessions open at once (default 1024)")
    p.add_argument(
        "--write-rows", metavar="FILE", type=Path,
        help="write NeMo Gym dataset rows (JSONL: responses_create_params and openagent_case, what POST /seed_session "
        "takes) of --rows cases drawn from --seed on, and exit without serving",
    )  # fmt: skip
    p.add_argument("--rows", type=at_least(1), default=64, help="how many rows --write-rows writes (default 64)")
    p.add_argument("--seed", type=at_least(0), default=0, help="the first row's seed (default 0)")
    p.add_argument("--tier", default=None, help="draw the rows' perturbations from this tier (default: all)")


def app_for(domain: str, reward: str = "completion", max_sessions: int = 1024, host: str = "127.0.0.1") -> Starlette:
    """The server's ASGI app; :class:`~sandbox.errors.UsageError` for an unknown domain or reward."""
    import sandbox
    from sandbox.domains import get_domain
    from sandbox.domains.mcp import require_sdk
    from sandbox.evaluation.train_draw import RESET_KEYS, train_case
    from sandbox.perturbations.base import TIERS
    from sandbox.proxy.env_app import env_app
    from sandbox.proxy.env_server import Sessions
    from training.rewards import get_reward, reward_name

    require_sdk()
    name = get_domain(domain).name
    score = get_reward(reward)
    description = (
        f"The {name} tool world of pytest-openagent, perturbed: tasks of the train split under "
        "perturbations of the train pool, the judge's outcome as the reward"
    )
    metadata = {"name": f"openagent-{name}", "description": description, "version": sandbox.__version__,
                "domain": name, "split": "train", "pool": "train",
                "reward": reward_name(reward), "tiers": list(TIERS), "reset_fields": list(RESET_KEYS),
                "actions": ["list_tools", "call_tool", "answer"]}  # fmt: skip
    sessions = Sessions(lambda body: train_case(name, body), score, max_sessions)
    return env_app(sessions, f"openagent-{name}", metadata, host)


def write_rows(domain: str, path: Path, count: int, seed: int = 0, tier: str | None = None) -> int:
    """Write ``count`` NeMo Gym dataset rows of ``domain``'s train split to ``path``; how many were written."""
    import json

    from sandbox.domains import get_domain
    from sandbox.evaluation.train_draw import train_case
    from sandbox.files import write_atomically
    from sandbox.perturbations import registry
    from sandbox.proxy.env_nemo_gym import dataset_rows

    name = get_domain(domain).name
    if tier is not None:
        registry.normalize_tiers(tier)
    rows = dataset_rows(lambda body: train_case(name, body), count, seed, tier)
    write_atomically(path, "".join(json.dumps(row) + "\n" for row in rows))
    return len(rows)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    if args.write_rows is not None:
        count = write_rows(args.domain, args.write_rows, args.rows, args.seed, args.tier)
        print(f"openagent env-serve: {count} NeMo Gym rows of {args.domain} in {args.write_rows}", file=sys.stderr)
        return 0
    app = app_for(args.domain, args.reward, args.max_sessions, args.host)
    print(f"openagent env-serve: {args.domain} at http://{args.host}:{args.port} (POST /reset to start)",
          file=sys.stderr)  # fmt: skip
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
