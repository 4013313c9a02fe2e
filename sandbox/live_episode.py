"""An episode in progress: what each of the agent's replies does to it (its tool calls run, its messages
added, the step limit counted) and how it ends (judged, or failed as ``agent_error``). The runner that asks the
agent and drives many episodes is ``sandbox.episode``."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from sandbox.agent import Message, Reply, RequestFailed, ToolSpec
from sandbox.env import Env
from sandbox.errors import WorldFailure
from sandbox.judge import Ending, audit, deceived, judge
from sandbox.parse import ToolCall, clean_text, parse_reply
from sandbox.prompt import tools_changed
from sandbox.redact import redact
from sandbox.trajectory import Episode, Step

_RAW_CALLS = json.JSONEncoder(default=str)
"""``json.dumps(..., default=str)``, built once: dumps builds an encoder per call when given options."""
MAX_STORED_REPLY = 4_000
"""Characters of a reply kept in its step's record (``Step.reply``); the rest is cut, with a note."""
MAX_MESSAGE_CHARS = 50_000
"""Characters of a reply's text kept in the conversation and the answer (the judge reads it all):
no real reply is longer, and it keeps an episode bounded whatever the agent says."""


@dataclass
class LiveEpisode:
    """An episode between its start and its end: its env, the conversation so far, the tools the agent sees."""

    env: Env
    episode_id: str
    messages: list[Message]
    tools: list[ToolSpec]
    steps: list[Step] = field(default_factory=list)
    meta: list[dict[str, Any]] = field(default_factory=list)
    turn_start: int = 0
    """Steps before the current user turn: the step limit counts per user turn."""
    onsets: frozenset[int] = frozenset()
    """The turns after which the env changes (drift): the tool list is read again there."""


def _assistant_message(text: str, calls: list[ToolCall]) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "type": "function",
                **({"id": c.id} if c.id else {}),
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    return message


def _tool_message(call: ToolCall, content: str) -> Message:
    message: Message = {"role": "tool", "name": call.name, "content": content}
    if call.id:
        message["tool_call_id"] = call.id
    return message


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


def _shorten(value: Any, limit: int, depth: int = 0) -> Any:
    """``value`` with each string cut to ``limit`` characters, each container to its first 64 items and 8 levels:
    all a preview shows, and cheap to print however large the value (a 10 MB argument)."""
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, dict | list | tuple) and depth >= 8:
        return "..."
    if isinstance(value, dict):
        return {k: _shorten(v, limit, depth + 1) for k, v in itertools.islice(value.items(), 64)}
    if isinstance(value, list | tuple):
        return [_shorten(v, limit, depth + 1) for v in value[:64]]
    return value


def _preview(value: Any, limit: int = 2000) -> str:
    """A short, storable picture of something the agent gave; never raises."""
    try:
        text = value if isinstance(value, str) else _RAW_CALLS.encode(_shorten(value, limit))
    except Exception:  # too deep, a cycle, an int too long to print, a __str__ that raises
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    return _cut(clean_text(text), limit)


def error_text(exc: BaseException) -> str:
    """``Type: message`` of an exception, storable and short, secrets redacted; never raises."""
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    return _cut(redact(clean_text(f"{type(exc).__name__}: {message}")), 2000)


HARNESS = "the harness ran out of"
"""How the error of an episode begins when this machine, not the agent, failed it (see :func:`harness_error`)."""
_EXHAUSTED = (("Too many open files", "file descriptors"), ("[Errno 24]", "file descriptors"),
              ("can't start new thread", "threads"), ("Cannot allocate memory", "memory"),
              ("MemoryError", "memory"))  # fmt: skip


def harness_error(error: str) -> str:
    """``error``, named as the harness's where it says this process ran out of descriptors, threads or memory
    (``EMFILE``, a thread that would not start): running the episodes failed, not the agent."""
    resource = next((what for sign, what in _EXHAUSTED if sign in error), None)
    if resource is None or error.startswith(HARNESS):
        return error
    return f"{HARNESS} {resource} running this episode; not the agent's failure: {error}"


Failing = Literal["agent_error", "world_error"]
"""How an episode ends that the agent or the world could not carry on."""


def fail(live: LiveEpisode, error: str, ending: Failing = "agent_error") -> Episode:
    """End an episode as ``agent_error`` (or ``world_error``), ``error`` on its last step (named as the
    harness's where the machine failed it, :func:`harness_error`); never raises for a working env."""
    if ending == "agent_error":
        error = harness_error(error)
    live.steps.append(Step(reply="", error=error))
    try:
        return _finish(live, ending)
    except Exception as exc:  # the trajectory would not validate: keep the error, drop the rest
        try:
            perturbation = live.env.describe()
        except Exception:
            perturbation = ""
        return Episode(
            task=live.env.task,
            perturbation=perturbation,
            messages=[],
            steps=[Step(reply="", error=f"{error}; then {error_text(exc)}")],
            ending=ending,
            outcome=ending,
        )


def _finish(live: LiveEpisode, ending: Ending, answer: str | None = None, judged: str | None = None) -> Episode:
    """The finished episode; ``judged`` is the whole answer where ``answer`` (stored) was cut."""
    env = live.env
    if ending == "world_error" or world_failure(env) is not None:
        return _world_error(live, answer)
    kinds = [r.error for s in live.steps for r in s.results if r.error]
    writes = env.state.writes
    solvable = env.solvable
    verdict = env.verdict(ending)
    if verdict is None:
        text = answer if judged is None else judged
        # an unsolvable case is judged by refusal alone: its expected end state is never read
        end_state = env.end_state_ok() if solvable else None
        outcome = judge(env.task, ending, text, writes, kinds, solvable=solvable, end_state=end_state)
    else:  # an env that judges itself (BFCL's checker); its reason goes on the last step
        outcome, reason = verdict
        if reason and live.steps and live.steps[-1].error is None:
            live.steps[-1] = live.steps[-1].model_copy(update={"error": reason})
    episode = Episode(
        task=env.task,
        perturbation=env.describe(),
        messages=live.messages,
        steps=live.steps,
        ending=ending,
        answer=answer,
        outcome=outcome,
        solvable=solvable,
        writes=[{"tool": w.tool, "args": w.args, "code": w.code} for w in writes],
        meta=live.meta,
    )
    episode = env.review(episode)  # the task's own check, where it has one
    if world_failure(env) is not None:  # the end state or the check could not be read from the world
        return _world_error(live, answer)
    outcome = episode.outcome
    if verdict is None:  # an env that judges itself (BFCL's checker) counts the state its own way
        idempotent = {t.name for t in env.domain.tools_for(env.task) if getattr(t, "idempotent", False)}
        outcome = audit(outcome, env.task, writes, idempotent)  # side effects, whatever the check said
    lied = env.state.deceptions
    if lied:
        calls = [[c.arguments for c in s.calls] for s in live.steps]
        outcome = deceived(outcome, env.task, answer if judged is None else judged, calls, lied)
        served = [{"tool": d.tool, "turn": d.turn, "values": [list(v) for v in d.values]} for d in lied]
        episode = episode.model_copy(update={"deceptions": served})
    return episode if outcome == episode.outcome else episode.model_copy(update={"outcome": outcome})


def _world_error(live: LiveEpisode, answer: str | None) -> Episode:
    """The episode as the world left it: no verdict on the agent, the world's failure on its last step."""
    broken = world_failure(live.env)
    if broken is not None and not any(broken in (s.error or "") for s in live.steps):
        live.steps.append(Step(reply="", error=f"the world failed: {broken}"))
    env = live.env
    return Episode(
        task=env.task, perturbation=env.describe(), messages=live.messages, steps=live.steps, ending="world_error",
        answer=answer, outcome="world_error", solvable=env.solvable,
        writes=[{"tool": w.tool, "args": w.args, "code": w.code} for w in env.state.writes], meta=live.meta,
    )  # fmt: skip


def world_failure(env: Env) -> str | None:
    """Why the world of ``env``'s episode failed under it (its state says so: ``world_failure``), else ``None``."""
    failure = getattr(getattr(env.state, "data", None), "world_failure", None)
    return failure if isinstance(failure, str) else None


def advance(ep: LiveEpisode, reply: Reply | str, max_steps: int) -> Episode | None:
    """Apply one reply to one episode; the finished episode if it ended.

    Never raises. An exception while processing the reply (a bug of the sandbox, a tool or a
    wrapper, met on this reply) ends this episode only, as ``agent_error``: the episode cache
    keeps no such episode, so the case runs again once the bug is fixed.
    """
    try:
        return _apply(ep, reply, max_steps)
    except WorldFailure as exc:
        return fail(ep, _cut(redact(clean_text(f"the world failed: {exc}")), 2000), "world_error")
    except Exception as exc:
        return fail(ep, f"the sandbox failed on this reply: {error_text(exc)}")


def _apply(ep: LiveEpisode, reply: Reply | str, max_steps: int) -> Episode | None:
    if isinstance(reply, str):
        reply = Reply(text=reply)
    elif isinstance(reply, RequestFailed):
        return fail(ep, _cut(redact(clean_text(f"request failed: {reply.error}")), 2000))
    elif not isinstance(reply, Reply):
        ep.steps.append(Step(reply=_preview(reply, 200), error=f"not a reply: {clean_text(type(reply).__name__)}"))
        return _finish(ep, "agent_error")
    text, tool_calls = reply.text, reply.tool_calls
    ep.meta.append(reply.meta if isinstance(reply.meta, dict) else {})
    raw = clean_text(text) if isinstance(text, str) else _preview(text)
    if tool_calls is not None and not (isinstance(tool_calls, list | tuple) and not tool_calls):
        raw = raw + "\n" + _preview(tool_calls)
    raw = _cut(raw, MAX_STORED_REPLY)
    parsed = parse_reply(text, tool_calls)
    if parsed.error is not None:
        ep.steps.append(Step(reply=raw, error=parsed.error))
        return _finish(ep, "parse_error")
    said = _cut(parsed.text, MAX_MESSAGE_CHARS)
    if not parsed.calls:
        ep.steps.append(Step(reply=raw))
        ep.messages.append({"role": "assistant", "content": said})
        follow = ep.env.next_user_message()
        if follow is None:
            return _finish(ep, "answer", said, judged=parsed.text)
        # a task of several user turns (BFCL): the next one opens, and its tools may differ; a drift's notice, if
        # one starts here, comes before the user's message, which stays the last
        _next_turn(ep, ep.env.tool_specs())
        ep.messages.append({"role": "user", "content": follow})
        ep.tools = ep.env.tool_specs()
        ep.turn_start = len(ep.steps)
        return None
    results = [ep.env.call(c.name, c.arguments) for c in parsed.calls]
    ep.steps.append(Step(reply=raw, calls=parsed.calls, results=results))
    ep.messages.append(_assistant_message(said, parsed.calls))
    ep.messages.extend(_tool_message(c, ep.env.observe(r)) for c, r in zip(parsed.calls, results, strict=True))
    if len(ep.steps) - ep.turn_start >= max_steps:
        return _finish(ep, "step_limit")
    _next_turn(ep, ep.tools)
    return None


def _next_turn(ep: LiveEpisode, tools: list[ToolSpec]) -> None:
    """Count the turn just played; where a drift starts after it and the tool list is no longer ``tools`` (the
    list the agent saw), the agent gets the new list with a notice, as an MCP client gets
    ``notifications/tools/list_changed``."""
    state = ep.env.state
    state.turn += 1
    if state.turn not in ep.onsets:
        return
    now = ep.env.tool_specs()
    if now != tools:
        ep.tools = now
        ep.messages.append(tools_changed([t["function"]["name"] for t in now]))
