"""The static baseline: an agent trained on the clean world only (the paper's blind open-loop agent).

It knows the training phrasings (on a world without families of its own, each task's clean request),
the clean tool names and schemas, and the clean trajectory of each task (the runner briefs it on the
task, as a :class:`~sandbox.agent.Reference`: a stand-in for what training burned in). It acts as if
blind: it recognises only requests worded as in training, calls the clean names with the clean
argument names in the clean order, one wave per turn (on a task of several user turns, each turn's
calls, as :class:`~sandbox.domains.bfcl.replayer.GoldReplayer` does), never retries, never reads a
description, takes ids and answers from the keys where the clean world puts them, and writes codes in
the format it learned. It solves the clean test split of every world with gold plans; every
perturbation that bites shows up as its loss.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from sandbox import computed as computing
from sandbox.agent import Briefed, Reply, Turn
from sandbox.agents.oracle import lookup, refuse
from sandbox.agents.oracle.agent import DONE, NOTHING_TO_CALL, user_turn
from sandbox.budget import user_turns
from sandbox.domains import get_domain
from sandbox.gold_plan import gold_results
from sandbox.task import Task

_CODE = re.compile(r"[A-Z]{2}-[A-Z0-9]{5}")
GUESS = "Done."
"""What it says when it cannot place the request: a confident non-answer, as overfit models do."""


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


_MEMORY: dict[tuple[str, int, str, int], tuple[dict[str, Any], dict[tuple[str, str], tuple[str, str]]]] = {}


def _memory(task: Task) -> tuple[dict[str, Any], dict[tuple[str, str], tuple[str, str]]]:
    """The clean trajectory: each call's clean result, and where each argument taken from a result came from."""
    key = (task.domain, id(get_domain(task.domain)), task.id, task.seed)
    if key not in _MEMORY:
        if len(_MEMORY) > 4096:
            _MEMORY.clear()
        _MEMORY[key] = _remember(task)
    return _MEMORY[key]


def _remember(task: Task) -> tuple[dict[str, Any], dict[tuple[str, str], tuple[str, str]]]:
    results = {i: r.content for i, r in gold_results(get_domain(task.domain), task).items()}
    origin = {}
    for call in task.plan:
        for param, value in call.args.items():
            for dep in call.after:
                path = _find(results[dep], value)
                if path is not None:
                    origin[(call.id, param)] = (dep, path)
                    break
    return results, origin


def _find(content: Any, value: Any, prefix: str = "", text: bool = False) -> str | None:
    """The path of the first leaf of ``content`` equal to ``value`` (as text, case aside, with ``text``)."""
    if isinstance(content, dict):
        items: Iterable[tuple[Any, Any]] = content.items()
    elif isinstance(content, list):
        items = ((str(i), v) for i, v in enumerate(content))
    else:
        same = str(content).casefold() == str(value).casefold() if text else content == value
        return prefix if same and prefix else None
    for key, inner in items:
        path = _find(inner, value, f"{prefix}.{key}" if prefix else key, text)
        if path is not None:
            return path
    return None


def _decode(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


class StaticAgent(Briefed):
    """Follows the clean plan blind. ``domains`` are the worlds it was trained on (default: every world it meets;
    ``("poi",)`` is the paper's setting, under which a medical task is out of its reach).

    A reference agent: it must be briefed on each episode's task (``sandbox.run_episodes`` does it)."""

    name = "static"

    def __init__(self, domains: Sequence[str] | None = None) -> None:
        self.domains = None if domains is None else tuple(domains)

    def fingerprint(self) -> str:
        return f"static-v2:{'*' if self.domains is None else ','.join(self.domains)}"

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        return [self.reply(turn) for turn in turns]

    def recognises(self, task: Task, query: str) -> bool:
        """Whether ``query`` is worded as in training: a phrasing of the task's family, or the task's own request."""
        if self.domains is not None and task.domain not in self.domains:
            return False
        families = {f.name: f for f in get_domain(task.domain).families}
        family = families.get(task.family)
        phrasings = {_norm(p.format(**task.params)) for p in family.phrasings} if family is not None else set()
        return _norm(query) in phrasings | {_norm(task.query)}

    def reply(self, turn: Turn) -> Reply:
        task = self.task_for(turn.episode_id)
        query = next((m["content"] for m in turn.messages if m.get("role") == "user"), "")
        if not self.recognises(task, query):
            return Reply(text=GUESS)
        if task.unsolvable == "missing_capability":
            return refuse("none of the available tools can do this")
        observed = {m["tool_call_id"]: _decode(m["content"]) for m in turn.messages if m.get("role") == "tool"}
        several = user_turns(task) is not None
        part = user_turn(task, turn.messages)
        if part is None:  # a user turn that no gold call answers
            return Reply(text=NOTHING_TO_CALL)
        since = turn.messages
        if several:  # the replies since the user turn now played
            last_user = max(i for i, m in enumerate(turn.messages) if m.get("role") == "user")
            since = turn.messages[last_user:]
        turns_taken = sum(1 for m in since if m.get("role") == "assistant" and m.get("tool_calls"))
        waves = part.waves()
        if turns_taken < len(waves):
            return Reply(tool_calls=[self.call(task, c, observed) for c in waves[turns_taken]])
        if several:
            return Reply(text=DONE)
        if not task.solvable:
            return refuse("the tools found nothing to act on")
        return Reply(text=self.answer(task, observed))

    def call(self, task: Task, call: Any, observed: dict[str, Any]) -> dict[str, Any]:
        _, origin = _memory(task)
        args = {}
        for param, value in call.args.items():
            if (call.id, param) in origin:
                dep, path = origin[(call.id, param)]
                value = lookup(observed.get(dep), path)
            args[param] = value
        return {"id": call.id, "function": {"name": call.tool, "arguments": args}}

    def answer(self, task: Task, observed: dict[str, Any]) -> str:
        parts = []
        functions = get_domain(task.domain).computed(task)
        results, _ = _memory(task)
        for key, src in task.sources.items():
            value = computing.value(src, observed, functions.get(key))
            value = value if value is None else computing.text(src, value)
            # a code written in the shape the clean world gives codes (ours: AB-12345), as training taught
            clean = computing.value(src, results, functions.get(key))
            if (
                isinstance(value, str)
                and isinstance(clean, str)
                and _CODE.fullmatch(clean)
                and not _CODE.fullmatch(value)
            ):
                found = _CODE.search(value)
                alnum = re.sub(r"[^A-Z0-9]", "", value.upper())
                value = found.group(0) if found else f"{alnum[:2]}-{alnum[2:7]}"
            parts.append(f"{key}: {value}")
        for key, gold in task.answer.items():
            if key in task.sources:
                continue
            # no source named: read where the clean answers hold the value
            where = next(((c.id, p) for c in task.plan if (p := _find(results.get(c.id), gold, text=True))), None)
            if where is not None:
                parts.append(f"{key}: {lookup(observed.get(where[0]), where[1])}")
        return "; ".join(parts)
