"""BFCL's eight stateful Python backends, run directly: fresh instances per episode, no globals.

BFCL itself keeps each instance in a module global named after the model and the test entry and
calls it through ``eval``; here an episode owns its instances (built from the entry's
``initial_config``, deep-copied, as BFCL builds them), and a call is a method call with the parsed
arguments. A call's *result* is the string BFCL records for it (a ``str`` as is, a ``dict`` as
JSON, anything else through ``str``, an exception as ``Error during execution: ...``): the
response checker compares those strings.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
BACKENDS: dict[str, tuple[str, str]] = {
    # class name: (module, function-doc file), from bfcl_eval.constants.executable_backend_config
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
STATELESS = frozenset({"MathAPI"})
"""Classes BFCL builds without loading a scenario."""
BLOCKED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
"""Method names BFCL refuses to execute; refused here too, so results match."""


def _quiet_project_root() -> None:
    # bfcl_eval.constants.eval_config makes result/score/lock folders under BFCL_PROJECT_ROOT when
    # imported (by default next to site-packages). The backends do not import it, but point it at a
    # cache folder first anyway, so nothing of ours can make it write into site-packages.
    root = Path(os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir()) / "pytest-openagent" / "bfcl"
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(root))


@cache
def backend_class(name: str) -> type:
    _quiet_project_root()
    module, _ = BACKENDS[name]
    return getattr(importlib.import_module(f"{_PREFIX}.{module}"), name)


def build_instances(classes: list[str], config: dict[str, Any], long_context: bool) -> dict[str, Any]:
    """Fresh instances of ``classes``, each loaded from its part of ``config`` (deep-copied)."""
    instances = {}
    for name in classes:
        instance = backend_class(name)()
        if name not in STATELESS:
            instance._load_scenario(copy.deepcopy(config.get(name, {})), long_context=long_context)
        instances[name] = instance
    return instances


@cache
def method_names(name: str) -> tuple[str, ...]:
    """The public methods of a backend class: the functions BFCL exposes."""
    cls = backend_class(name)
    return tuple(n for n, m in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_"))


def methods(instances: dict[str, Any]) -> dict[str, Any]:
    """Method name to bound method over ``instances``; a later class wins a shared name, as in BFCL."""
    return {n: getattr(inst, n) for cls, inst in instances.items() for n in method_names(cls)}


def result_text(value: Any) -> str:
    """The string BFCL records for a call's return value."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:
            return str(value)
    return str(value)


def execute(method: Any, name: str, arguments: dict[str, Any]) -> tuple[Any, str, Exception | None]:
    """Call ``method(**arguments)``: (what the agent is shown, the result string BFCL records, the
    exception if it raised). The agent is shown a dict result as JSON data (a copy: a backend may
    hand back a module-level dict, as vehicle control's long-context weather does), anything else
    as its string."""
    if name in BLOCKED:
        exc = Exception(f"Function call {name} is not allowed.")
        return None, f"Error during execution: {exc}", exc
    try:
        value = method(**arguments)
    except Exception as exc:
        return None, f"Error during execution: {exc}", exc
    text = result_text(value)
    if type(value) is dict:
        try:
            return json.loads(text), text, None
        except ValueError:  # a dict json.dumps could not write: str() gave the text
            pass
    return text, text, None


def public_state(instances: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The public attributes of each instance, live (not copied): what BFCL's state checker compares."""
    return {name: {k: v for k, v in vars(inst).items() if not k.startswith("_")} for name, inst in instances.items()}


def snapshot(instances: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:func:`public_state`, deep-copied."""
    return copy.deepcopy(public_state(instances))
