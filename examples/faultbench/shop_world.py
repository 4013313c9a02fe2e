"""faultbench's shop world (``shop.yaml``) for pytest-openagent: the server in memory and its end state.

``server`` builds a fresh faultbench MCP server of the world (what ``faultbench serve shop.yaml`` serves over
stdio, without a process per episode); ``end_state`` is the ``inspect`` hook of ``shop_tasks.jsonl``: its
orders and its refunds, read through its own tools. See docs/worlds/faultbench.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

WORLD = Path(__file__).with_name("shop.yaml")


def server() -> Any:
    """A fresh server of the world: its records seeded anew, faults off, its clock at faultbench's default."""
    from faultbench.faults import FakeClock
    from faultbench.server.mcp_server import build_server
    from faultbench.world import World

    return build_server(World.load(WORLD), clock=FakeClock())


def end_state(call: Callable[[str, dict[str, Any]], Any]) -> dict[str, Any]:
    """Every order and every refund, as the world's list operations return them."""
    return {"orders": call("list_orders", {}), "refunds": call("list_refunds", {})}
