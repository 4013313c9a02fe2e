"""Tasks over the notes server (tests/mcp/notes_server.py): look-ups, a chain, a write, one to refuse."""

from sandbox import Call, UserTask

TASKS = [
    UserTask("What does the note n1 say?", id="text", plan=[Call(id="g", tool="get_note", args={"note_id": "n1"})],
             sources={"text": "g.text"}),
    UserTask("What is the title of the note tagged work?", id="title", sources={"title": "s.results.0.title"},
             plan=[Call(id="s", tool="search_notes", args={"tag": "work"})]),
    UserTask("What does the note tagged health say?", id="chain", sources={"text": "g.text"},
             plan=[Call(id="s", tool="search_notes", args={"tag": "health"}),
                   Call(id="g", tool="get_note", args={"note_id": "n3"}, after=("s",))]),
    UserTask("Add a note titled Call Bob saying at 5pm, tagged work.", id="add",
             plan=[Call(id="a", tool="add_note", args={"title": "Call Bob", "text": "at 5pm", "tag": "work"})]),
    UserTask("Share the note n1 with Alice by email.", id="share", unsolvable="missing_capability"),
]  # fmt: skip
