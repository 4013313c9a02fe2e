"""Two ``tools/list`` snapshots of a server (before and after a release) and the change between them.

A snapshot is the result of MCP's ``tools/list``: ``{"tools": [{"name", "description", "inputSchema",
"outputSchema"?}, ...]}`` (a whole JSON-RPC response, ``{"result": {"tools": [...]}}``, is read too);
``openagent mcp-proxy --snapshot FILE`` records one. :func:`derive` reads the release off two of them: tools
renamed (the same name in another case style, or the same parameters and mostly the same description, or a
description that names the old tool), removed and added; for each tool kept, its parameters renamed (by case
style, or the same description and type), added and removed, its description and its result fields (where
both snapshots give an ``outputSchema``) renamed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sandbox.errors import UsageError
from sandbox.identifiers import fold

RECORD = "record one with `openagent mcp-proxy --upstream SERVER --snapshot FILE`"
_WORD = re.compile(r"[a-z0-9]+")


def read_snapshot(path: str | Path) -> dict[str, dict[str, Any]]:
    """The tools of a snapshot file by name; a clear error for a file that is not a ``tools/list`` result."""
    where = Path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror or exc}); {RECORD}") from None
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON ({exc}); a snapshot is a tools/list result: {RECORD}") from None
    return parse_snapshot(data, str(where))


def parse_snapshot(data: Any, where: str = "the snapshot") -> dict[str, dict[str, Any]]:
    """The tools of a ``tools/list`` result (or of a JSON-RPC response holding one), by name."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, list):
        got = f"an object with keys {sorted(data)[:5]}" if isinstance(data, dict) else type(data).__name__
        raise UsageError(f'{where}: not a tools/list result (got {got}, expected {{"tools": [...]}}); {RECORD}')
    out: dict[str, dict[str, Any]] = {}
    for i, tool in enumerate(tools):
        ok = isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]
        if not ok or not isinstance(tool.get("inputSchema", {}), dict):
            raise UsageError(f"{where}: tools[{i}] is not a tool (each needs a 'name' and an 'inputSchema' object); "
                             f"{RECORD}")  # fmt: skip
        if tool["name"] in out:
            raise UsageError(f"{where}: lists the tool {tool['name']!r} twice; {RECORD}")
        schema = tool.get("inputSchema") or {"type": "object", "properties": {}}
        out[tool["name"]] = {
            "name": tool["name"], "description": str(tool.get("description") or ""),
            "inputSchema": schema, **({"outputSchema": tool["outputSchema"]} if tool.get("outputSchema") else {}),
        }  # fmt: skip
    return out


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2}


def _alike(old: dict[str, Any], new: dict[str, Any]) -> float:
    """How surely ``new`` is ``old`` renamed: 3 the same name in another style, 2 a description that names the old
    tool, 1 + overlap the same parameters (their folds) and descriptions sharing at least half their words."""
    if fold(old["name"]) == fold(new["name"]):
        return 3.0
    if re.search(rf"(?<![\w-]){re.escape(old['name'])}(?![\w-])", new["description"]):
        return 2.0
    same = {fold(p) for p in _props(old["inputSchema"])} == {fold(p) for p in _props(new["inputSchema"])}
    a, b = _words(old["description"]), _words(new["description"])
    overlap = len(a & b) / max(1, len(a | b))
    return 1.0 + overlap if same and overlap >= 0.5 else 0.0


def _renamed(old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    """Old name → new name of the properties only one side has: the same fold, or the same description and type."""
    gone = [p for p in old if p not in new]
    came = [p for p in new if p not in old]
    out: dict[str, str] = {}
    for p in gone:
        match = next((q for q in came if q not in out.values() and fold(q) == fold(p)), None)
        if match is None and old[p].get("description"):
            match = next((q for q in came if q not in out.values() and new[q].get("description") ==
                          old[p]["description"] and new[q].get("type") == old[p].get("type")), None)  # fmt: skip
        if match is not None:
            out[p] = match
    return out


def _tool_change(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    before, after = _props(old["inputSchema"]), _props(new["inputSchema"])
    params = _renamed(before, after)
    change: dict[str, Any] = {
        "to": new["name"], "description": new["description"], "input": new["inputSchema"],
        "params": {v: k for k, v in params.items()},
        "added": sorted(p for p in after if p not in before and p not in params.values()),
        "removed": sorted(p for p in before if p not in after and p not in params),
    }  # fmt: skip
    if "outputSchema" in old and "outputSchema" in new:
        fields = _renamed(_props(old["outputSchema"]), _props(new["outputSchema"]))
        if fields:
            change["fields"] = fields
    same = (new["name"] == old["name"] and new["description"] == old["description"] and not params
            and not change["added"] and not change["removed"] and not change.get("fields")
            and new["inputSchema"] == old["inputSchema"])  # fmt: skip
    return {} if same else change


def derive(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The release from ``old`` to ``new`` (both by tool name, as :func:`parse_snapshot` gives them):
    ``{"tools": {old name: change}, "removed": [...], "added": [new tool, ...]}``, empty where nothing changed."""
    gone = [n for n in old if n not in new]
    came = [n for n in new if n not in old]
    pairs = sorted(((_alike(old[g], new[c]), g, c) for g in gone for c in came), key=lambda x: (-x[0], x[1], x[2]))
    moved: dict[str, str] = {}
    for score, g, c in pairs:
        if score > 0 and g not in moved and c not in moved.values():
            moved[g] = c
    tools = {}
    for name in old:
        target = name if name in new else moved.get(name)
        change = _tool_change(old[name], new[target]) if target is not None else {}
        if change:
            tools[name] = change
    removed = sorted(n for n in gone if n not in moved)
    added = [new[c] for c in came if c not in moved.values()]
    release: dict[str, Any] = {}
    if tools:
        release["tools"] = tools
    if removed:
        release["removed"] = removed
    if added:
        release["added"] = added
    return release


def summary(release: dict[str, Any]) -> list[str]:
    """The release in lines a person reads: one per change."""
    lines = []
    for name, change in release.get("tools", {}).items():
        head = f"{name} → {change['to']}" if change["to"] != name else name
        parts = [f"{a} → {b}" for b, a in change["params"].items()]
        parts += [f"+{p}" for p in change["added"]] + [f"-{p}" for p in change["removed"]]
        parts += [f"result {a} → {b}" for a, b in change.get("fields", {}).items()]
        lines.append(f"{head}: {', '.join(parts) or 'description or schema changed'}")
    lines += [f"{name}: removed" for name in release.get("removed", [])]
    lines += [f"{tool['name']}: added" for tool in release.get("added", [])]
    return lines
