"""Training data as chat JSONL: the rows TRL's ``SFTTrainer`` (and other trainers) read.

Each line is one gold conversation::

    {"messages": [...], "tools": [...], "meta": {"task": ..., "family": ..., "perturbations": [...]}}

``messages`` is the episode as the agent lived it: the system prompt, the user's request, assistant turns
whose calls are ``tool_calls`` entries ``{"type": "function", "id": ..., "function": {"name", "arguments"}}``
(``arguments`` a JSON object, as Hugging Face chat templates take it), and each result as a message of
role ``tool``. ``tools`` are the JSON-schema specs the episode was played under (a perturbed case's
renamed or rewritten ones), in the form chat templates take through ``tools=``. ``meta`` says where the
row came from; trainers ignore columns they do not know.

Building the rows needs no torch: the conversations come from :func:`training.dataset.build_trajectories`,
the same function ``openagent train sft|paft`` tokenizes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sandbox.files import write_atomically
from training.config import SFTConfig
from training.dataset import Trajectory, build_trajectories


def chat_row(trajectory: Trajectory) -> dict[str, Any]:
    """One JSONL row: the conversation, its tool specs and where it came from."""
    case = trajectory.case
    meta: dict[str, Any] = {"family": trajectory.family}
    if case is not None:
        meta["task"] = case.task.id
        meta["perturbations"] = [p.to_dict() for p in case.perturbations]
    else:
        meta["perturbations"] = [{"name": n} for n in trajectory.perturbations]
    return {"messages": trajectory.messages, "tools": trajectory.tools, "meta": meta}


def write_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write ``rows`` one JSON object a line, atomically (a reader never sees half a file); returns the count."""
    lines = [json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows]
    write_atomically(Path(path), "".join(lines))
    return len(lines)


def export(cfg: SFTConfig, path: str | Path) -> dict[str, Any]:
    """Write the gold trajectories that an SFT or PAFT run of ``cfg`` trains on to ``path``; a summary."""
    trajectories, meta = build_trajectories(cfg)
    rows = write_jsonl([chat_row(t) for t in trajectories], path)
    return {**meta, "rows": rows, "path": str(path)}
