"""The end state of faultbench's shop world (``shop.yaml``): its orders and its refunds, read through its own tools.

``inspect`` hook of ``shop_tasks.jsonl`` (docs/worlds/faultbench.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def end_state(call: Callable[[str, dict[str, Any]], Any]) -> dict[str, Any]:
    """Every order and every refund, as the world's list operations return them."""
    return {"orders": call("list_orders", {}), "refunds": call("list_refunds", {})}
