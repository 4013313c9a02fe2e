"""A small stateful MCP server built with the SDK: notes with tags, run over stdio or streamable HTTP.

``python notes_server.py [--http PORT] [--fault crash|hang|garbage --on TOOL [--after N]]
[--reset tool|none|broken] [--store FILE]``: a fault makes the server exit, hang, or write garbage on its
transport when ``TOOL`` is called (after its first ``N`` calls, which succeed; with ``--when FILE``, only
once that file exists), to test that an episode survives it. ``--reset`` says whether it offers a ``reset``
tool that works (``tool``), none, or one that does nothing (``broken``); ``--store`` keeps the notes in a JSON
file, which outlives the process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

FIRST = {
    "n1": {"title": "Groceries", "text": "milk, eggs, rye bread", "tag": "home"},
    "n2": {"title": "Standup", "text": "demo the proxy on Friday", "tag": "work"},
    "n3": {"title": "Dentist", "text": "Tuesday at 9:30", "tag": "health"},
}


def build(
    fault: str | None = None,
    on: str | None = None,
    version: str = "1.0",
    reset: str = "tool",
    store: str | None = None,
    after: int = 0,
    when: str | None = None,
) -> MCPServer:
    server = MCPServer("notes", version=version, log_level="WARNING")
    reset_kind = reset
    kept = json.loads(Path(store).read_text()) if store and os.path.exists(store) else FIRST
    notes: dict[str, dict[str, str]] = {k: dict(v) for k, v in kept.items()}

    def save() -> None:
        if store:
            Path(store).write_text(json.dumps(notes))

    calls = [0]

    def trip(tool: str) -> None:
        if fault is None or tool != on:
            return
        calls[0] += 1
        if calls[0] <= after or (when is not None and not os.path.exists(when)):
            return
        if fault == "crash":
            os._exit(3)
        if fault == "hang":
            time.sleep(3600)
        if fault == "garbage":
            sys.stdout.buffer.write(b"\x00this is not JSON-RPC\n{]\n")
            sys.stdout.buffer.flush()
            time.sleep(3600)

    @server.tool()
    def search_notes(tag: str) -> dict:
        """Search the notes by tag: the id and title of each note with that tag.

        Args:
            tag: a tag such as home, work or health
        """
        trip("search_notes")
        found = [{"note_id": k, "title": n["title"]} for k, n in sorted(notes.items()) if n["tag"] == tag]
        if not found:
            raise ToolError(f"no note tagged {tag!r}")
        return {"results": found}

    @server.tool()
    def get_note(note_id: str) -> dict:
        """Get the details of one note: its title, text and tag.

        Args:
            note_id: a note id from search_notes, e.g. n1
        """
        trip("get_note")
        if note_id not in notes:
            raise ToolError(f"no note {note_id!r}: not found")
        return {"note_id": note_id, **notes[note_id]}

    @server.tool()
    def add_note(title: str, text: str, tag: str) -> dict:
        """Add a new note with a title, a text and a tag; returns the new note's id.

        Args:
            title: the note's title
            text: what the note says
            tag: a tag such as home, work or health
        """
        trip("add_note")
        note_id = f"n{len(notes) + 1}"
        notes[note_id] = {"title": title, "text": text, "tag": tag}
        save()
        return {"note_id": note_id, "saved": True}

    @server.tool()
    def list_notes() -> dict:
        """List every note: id, title and tag."""
        return {"notes": [{"note_id": k, "title": n["title"], "tag": n["tag"]} for k, n in sorted(notes.items())]}

    def reset() -> dict:
        """Forget every change: the notes as they were at the start."""
        if reset_kind == "tool":
            notes.clear()
            notes.update({k: dict(v) for k, v in FIRST.items()})
            save()
        return {"reset": True}

    if reset_kind != "none":
        server.tool()(reset)

    return server


def broken() -> MCPServer:
    """A notes server whose reset tool does nothing (``notes_server:broken`` names it as a factory)."""
    return build(reset="broken")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None, help="serve streamable HTTP on this loopback port")
    parser.add_argument("--fault", choices=("crash", "hang", "garbage"), default=None)
    parser.add_argument("--on", default=None, help="the tool whose call trips the fault")
    parser.add_argument("--after", type=int, default=0, help="calls of that tool that succeed first")
    parser.add_argument("--when", default=None, help="trip the fault only once this file exists")
    parser.add_argument("--pid-file", default=None, help="write the process id here")
    parser.add_argument("--version", default="1.0")
    parser.add_argument("--reset", choices=("tool", "none", "broken"), default="tool")
    parser.add_argument("--store", default=None, help="keep the notes in this JSON file")
    args = parser.parse_args()
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    server = build(args.fault, args.on, args.version, args.reset, args.store, args.after, args.when)
    if args.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
