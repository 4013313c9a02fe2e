"""The trajectory an episode records (its turns, calls, results and outcome) and its readable transcript."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from sandbox.judge import GOOD_OUTCOMES, Ending, Outcome
from sandbox.parse import ToolCall
from sandbox.redact import redact
from sandbox.task import Task
from sandbox.tools import AGENT_ERRORS, ToolResult


class Step(BaseModel):
    """One agent turn: what it said, the calls it made, and what came back."""

    reply: str
    calls: list[ToolCall] = Field(default_factory=list)
    results: list[ToolResult] = Field(default_factory=list)
    error: str | None = None


class Episode(BaseModel):
    """A finished episode: the full trajectory and the judge's outcome. Round-trips through JSON."""

    task: Task
    perturbation: str = ""
    messages: list[dict[str, Any]]
    steps: list[Step]
    ending: Ending
    answer: str | None = None
    outcome: Outcome
    writes: list[dict[str, Any]] = Field(default_factory=list)
    solvable: bool | None = None
    """Whether the case could be completed: ``task.solvable`` unless a perturbation ruled it out."""
    model_faults: dict[str, Any] | None = None
    """Where the case injected faults into the agent's own model: what the LLM proxy did, turn by turn, and whether
    the harness asked its model again after the last fault (sandbox.perturbations.model)."""
    deceptions: list[dict[str, Any]] = Field(default_factory=list)
    """The wrong answers tools served (``deceptive_result``, ``deceptive_record``): tool, turn, and ``values`` as
    (told, true) pairs. Left out of the JSON when empty, so an episode without any keeps the form it always had."""
    meta: list[dict[str, Any]] = Field(default_factory=list, exclude=True)
    """Per-turn data from the agent (token ids, log-probabilities), kept in memory only."""
    usage: dict[str, Any] | None = None
    """The tokens the agent reported for the whole episode (``prompt``, ``completion``, ``source``), taken from
    ``meta`` where every turn gave them; ``None`` where it did not (:mod:`sandbox.usage` estimates them then)."""
    cached: bool = Field(default=False, exclude=True)
    """Whether the episode cache gave this episode back instead of running it (in memory only)."""
    clean_outcome: Outcome | None = Field(default=None, exclude=True)
    """The outcome of the same task with no perturbation, where the case ran beside its clean twin (``Case.run``
    through a runner); its own outcome for a clean case. Kept in memory only: it belongs to the case, not the run."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not data.get("deceptions"):
            data.pop("deceptions", None)
        return data

    @model_validator(mode="after")
    def _default_solvable(self) -> Episode:
        if self.solvable is None:
            self.solvable = self.task.solvable
        if self.usage is None and self.meta:
            from sandbox.usage import reported

            self.usage = reported(self.meta)
        return self

    @property
    def success(self) -> bool:
        return self.outcome in GOOD_OUTCOMES

    @property
    def calls(self) -> list[ToolCall]:
        return [c for s in self.steps for c in s.calls]

    @property
    def tool_errors(self) -> int:
        """Calls to tools that do not exist or with invalid arguments (the agent's fault)."""
        return sum(r.error in AGENT_ERRORS for s in self.steps for r in s.results)

    def explain(self) -> str:
        """A readable transcript: what was perturbed, what the clean twin did and where the agent went wrong."""
        return explain(self)

    def beside(self, clean: Episode, perturbed: bool) -> Episode:
        """This episode, knowing its clean twin's outcome (``perturbed=False``: it is its own twin)."""
        return self.model_copy(update={"clean_outcome": clean.outcome if perturbed else self.outcome})

    @property
    def fails_clean(self) -> bool:
        """Whether the task fails with no perturbation too (known where the episode ran beside its clean twin)."""
        return self.clean_outcome is not None and self.clean_outcome not in GOOD_OUTCOMES

    def __repr__(self) -> str:
        # pytest prints the repr in assertion failures: keep it one line; explain() has the story.
        return f"Episode({self.outcome}, {self.perturbation or self.task.id}, {len(self.steps)} turns)"


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
        *_blame(episode),
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
    if episode.outcome == "repeated_write":
        done = Counter(str(w.get("tool")) for w in episode.writes)
        gold = Counter(c.tool for c in task.plan)
        lines.append("  writes done: " + ", ".join(f"{t} x{n} (gold plan: {gold[t]})" for t, n in done.items()))
    return printable(redact("\n".join(lines)))


def _blame(episode: Episode) -> list[str]:
    """Whether a failure is the perturbation's doing: what the same task did with no perturbation."""
    if episode.success or episode.clean_outcome is None:
        return []
    if episode.perturbation in ("", episode.task.id):
        return ["fails with no perturbation: the agent fails this task clean"]
    if episode.clean_outcome in GOOD_OUTCOMES:
        twin = episode.clean_outcome
        return [f"clean twin: {twin} (the same task with no perturbation): the perturbation caused this"]
    return [
        f"clean twin: {episode.clean_outcome} too: the task fails with no perturbation, so this failure is not the "
        "perturbation's doing"
    ]


def printable(text: str) -> str:
    """``text`` with each character a terminal would act on rather than show (a control character such as ESC
    or NUL, a bidirectional override, a zero-width mark) written as its escape; newlines and tabs stay. What an
    agent or a server says reaches pytest's output through :func:`explain`."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)
