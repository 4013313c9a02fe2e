"""A readable transcript of an episode: what was perturbed and where the agent went wrong."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox.episode import Episode

_LIMIT = 300


def _short(text: str) -> str:
    return text if len(text) <= _LIMIT else text[:_LIMIT] + f"... ({len(text)} chars)"


def explain(episode: Episode) -> str:
    task = episode.task
    expected = "refuse" if not episode.solvable else ", ".join(f"{k}={v}" for k, v in task.answer.items())
    if task.write is not None:
        expected = (expected + ", " if task.answer else "") + f"code of {task.write.tool}"
    lines = [
        f"outcome: {episode.outcome} (case: {episode.perturbation or task.id})",
        f"query: {episode.messages[1]['content'] if len(episode.messages) > 1 else task.query}",
        f"expected: {expected}; gold plan: " + " -> ".join(c.tool for c in task.plan),
    ]
    for n, step in enumerate(episode.steps, 1):
        if step.error:
            lines.append(f"  turn {n}: {_short(step.reply)!r}\n    !! {step.error}")
            continue
        if not step.calls:
            lines.append(f"  turn {n}: answer {_short(step.reply)!r}")
        for call, result in zip(step.calls, step.results, strict=True):
            args = json.dumps(call.arguments, default=str)
            lines.append(f"  turn {n}: {call.name}({_short(args)})")
            lines.append(f"    -> {_short(result.render())}" + ("  !! " + result.error if result.error else ""))
    if episode.ending == "step_limit":
        lines.append(f"  (stopped at the step limit, {len(episode.steps)} turns)")
    return "\n".join(lines)
