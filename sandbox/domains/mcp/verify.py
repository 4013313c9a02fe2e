"""A server's reset verified before any episode trusts it: the gold plans replayed twice, compared.

Episodes of an MCP domain each need the server in its first state. Whatever keeps them apart (a reset
tool, the user's hook, a fresh process per episode) is checked when the domain is built, before the
gold replay and any episode: the plans that may change the server (those calling a tool not known to be
a lookup) are replayed in two passes, and every call's result, and the state ``inspect`` reads before and
after each plan, must be the same in both. On a shared server each plan starts with a reset; with
``reset="restart"`` each pass runs in a server of its own, so state kept outside the process (files, a
database) shows as a second pass that starts where the first ended. A mismatch is misuse
(:class:`ResetUnverified`, exit 2), with how to give the server a reset that works.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sandbox.domains.mcp.connection import ServerFault
from sandbox.domains.mcp.link import McpState, ServerLink
from sandbox.errors import UsageError

Plan = tuple[str, Sequence[tuple[str, dict[str, Any]]]]
"""A task's id and its gold calls, ``(tool, arguments)`` in order."""
HOW_TO_SET = ("set it with --mcp-reset (openagent eval), --openagent-mcp-reset (pytest), mcp-reset in "
              "[tool.openagent], \"reset\" in the tasks file's header, or reset= in Python (docs/mcp.md)")  # fmt: skip


class ResetUnverified(UsageError):
    """Replaying a gold plan twice, with a reset between, gave different results: episodes would leak."""


def plans(tasks: Iterable[Any], tools: Iterable[Any]) -> list[Plan]:
    """The gold plans of ``tasks`` (``UserTask`` or ``Task`` objects) that call a tool of ``tools`` not known to be a
    lookup: those whose replay may change the server. A plan naming a tool the server lacks is left to the
    domain's own checks, which say so."""
    listed = {t.name: t for t in tools}
    chosen: list[Plan] = []
    for i, task in enumerate(tasks):
        read = [_call(c) for c in getattr(task, "plan", ()) or ()]
        calls = [c for c in read if c is not None and c[0] in listed]
        if not calls or len(calls) < len(read):
            continue
        if any(not (listed[name].role_known and listed[name].role == "lookup") for name, _ in calls):
            chosen.append((str(getattr(task, "id", None) or f"task {i + 1}"), calls))
    return chosen


def verify_reset(link: ServerLink, chosen: Sequence[Plan]) -> None:
    """Replay ``chosen`` twice on ``link``'s server, a reset (or a fresh server) between, and compare; a
    :class:`ResetUnverified` at the first difference. A link with no reset (``None``) is not verified: the
    user said the writes do not matter."""
    if not chosen or link.reset is None:
        return
    first, second = _pass(link, chosen), _pass(link, chosen)
    for (task_id, calls), one, two in zip(chosen, first, second, strict=True):
        labels = ["the state inspect read before the plan"]
        labels += [f"call {n + 1}, {name}({_short(args)})," for n, (name, args) in enumerate(calls)]
        labels += ["the state inspect read after the plan"]
        for label, a, b in zip(labels, one, two, strict=True):
            if a != b:
                one_text, two_text = _apart(a, b)
                raise ResetUnverified(
                    f"task {task_id!r}'s gold plan, replayed twice with "
                    f"{_between(link)} between, gave different results: {label} gave {one_text} the first time "
                    f"and {two_text} the second. {_fix(link)}; {HOW_TO_SET}. A server that answers differently "
                    "on purpose (a clock, random ids) cannot be replayed or shrunk: hide those values from its results."
                )


def _pass(link: ServerLink, chosen: Sequence[Plan]) -> list[list[str]]:
    """Each plan's observations: ``inspect`` before, every call's result (or error), ``inspect`` after."""
    seen: list[list[str]] = []
    own = McpState(link) if link.isolated else None  # one fresh server for the whole pass
    try:
        for task_id, calls in chosen:
            state = own or McpState(link)  # a shared server is reset as a new episode takes it
            row = [_text(state.model_dump())]
            for name, arguments in calls:
                try:
                    row.append(_text(state.send(name, dict(arguments))))
                except ServerFault as fault:
                    if fault.world:
                        raise _died(task_id, name, arguments, fault) from None
                    row.append(_text({"error": fault.kind, "message": fault.message}))
            row.append(_text(state.model_dump()))
            if state.world_failure is not None:
                raise UsageError(f"checking its reset: {state.world_failure}; fix the server and run again")
            seen.append(row)
    except ServerFault as fault:
        raise UsageError(f"checking its reset: {fault.message}") from None
    finally:
        if own is not None:
            own.close()
    return seen


def _died(task_id: str, name: str, arguments: dict[str, Any], fault: ServerFault) -> UsageError:
    return UsageError(
        f"the server failed while its reset was checked (task {task_id!r}'s gold plan, {name}({_short(arguments)})), "
        f"before any episode: {fault.message}; fix the server and run again (nothing was measured)"
    )


def _apart(a: str, b: str, width: int = 160) -> tuple[str, str]:
    """``a`` and ``b`` shortened around where they first differ, so that the difference is shown, not cut."""
    if len(a) <= width and len(b) <= width:
        return a, b
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, at - width // 3)

    def cut(text: str) -> str:
        part = text[start : start + width]
        return ("..." if start else "") + part + ("..." if start + width < len(text) else "")

    return cut(a), cut(b)


def _call(call: Any) -> tuple[str, dict[str, Any]] | None:
    if isinstance(call, Mapping):
        tool, args = call.get("tool"), call.get("args", {})
    else:
        tool, args = getattr(call, "tool", None), getattr(call, "args", None)
    return (tool, dict(args)) if isinstance(tool, str) and isinstance(args, Mapping) else None


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else _text(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _between(link: ServerLink) -> str:
    if link.isolated:
        return "a fresh server (reset='restart')"
    if link.reset_tool is not None:
        return f"a call of its reset tool {link.reset_tool!r}"
    return "your reset hook"


def _fix(link: ServerLink) -> str:
    if link.isolated and link.target.kind == "memory":
        return (
            "A fresh server from your factory does not start from the same state: its servers share state (a "
            "module-level dict, a class attribute, a file or a database). Make the factory build the state anew for "
            "each server, or give it a reset: reset='tool:NAME' (a tool that restores its first state) or a hook "
            "reset='module:function' (reset(connection))"
        )
    if link.isolated:
        return (
            "A fresh server does not start from the same state: it keeps state outside its process (files, "
            "a database). Give it a reset: reset='tool:NAME' (a tool of the server that restores its first "
            "state), a hook reset='module:function' (reset(connection)), or a command that starts it clean"
        )
    if link.reset_tool is not None:
        return (f"Its tool {link.reset_tool!r} does not bring the server back to its first state. Fix the tool, or "
                "give another reset: a hook reset='module:function' (reset(connection)), or reset='restart' with a "
                "command or a server factory")  # fmt: skip
    return "Your hook does not bring the server back to its first state. Fix it, or give reset='tool:NAME' or 'restart'"


__all__ = ["HOW_TO_SET", "Plan", "ResetUnverified", "plans", "verify_reset"]
