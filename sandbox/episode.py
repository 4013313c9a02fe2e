"""Episodes: the runner that drives many in lockstep (the trajectory it records is in ``sandbox.trajectory``)."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox.agent import Message, Reply, RequestFailed, ToolSpec, Turn, as_agent, brief, close
from sandbox.env import Env
from sandbox.errors import UsageError
from sandbox.judge import Ending, audit, judge
from sandbox.parse import ToolCall, clean_text, parse_reply
from sandbox.prompt import tools_changed
from sandbox.redact import redact
from sandbox.task import Task
from sandbox.trajectory import Episode, Step

DEFAULT_MAX_STEPS = 8
_episode_ids = itertools.count()
_RAW_CALLS = json.JSONEncoder(default=str)
"""``json.dumps(..., default=str)``, built once: dumps builds an encoder per call when given options."""
MAX_STORED_REPLY = 4_000
"""Characters of a reply kept in its step's record (``Step.reply``); the rest is cut, with a note."""
START_FAILED = "the sandbox failed to start this case"
"""How the error of an episode that never started begins (a perturbation or the domain's code raised)."""
MAX_MESSAGE_CHARS = 50_000
"""Characters of a reply's text kept in the conversation and the answer (the judge reads it all):
no real reply is longer, and it keeps an episode bounded whatever the agent says."""


@dataclass
class _Live:
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


def _turn(ep: _Live) -> Turn:
    """What the agent may see of an episode: the conversation and the tool specs, never the task."""
    return Turn(ep.episode_id, list(ep.messages), ep.tools)


def _close(agent: Any, episode_ids: Sequence[str]) -> None:
    """Tell the agent these episodes ended. A ``close`` that raises changes nothing: the episodes
    are over and classified already, and the error is the agent's to fix, not the run's to lose."""
    with contextlib.suppress(Exception):
        close(agent, episode_ids)


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


def _error_text(exc: BaseException) -> str:
    """``Type: message`` of an exception, storable and short, secrets redacted; never raises."""
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    return _cut(redact(clean_text(f"{type(exc).__name__}: {message}")), 2000)


def _failed(live: _Live, error: str) -> Episode:
    """End an episode as ``agent_error``, ``error`` on its last step; never raises for a working env."""
    live.steps.append(Step(reply="", error=error))
    try:
        return _finish(live, "agent_error")
    except Exception as exc:  # the trajectory would not validate: keep the error, drop the rest
        try:
            perturbation = live.env.describe()
        except Exception:
            perturbation = ""
        return Episode(
            task=live.env.task,
            perturbation=perturbation,
            messages=[],
            steps=[Step(reply="", error=f"{error}; then {_error_text(exc)}")],
            ending="agent_error",
            outcome="agent_error",
        )


@dataclass(frozen=True)
class _Raised:
    """What stands in for a reply the agent could not give: the error its episode ends with."""

    error: str


def _ask(agent: Any, turns: list[Turn]) -> list[Any]:
    """One reply per turn, or a :class:`_Raised` for each turn the agent could not answer; never raises.

    A batch that raises is asked again in halves, down to single turns, so a conversation that makes
    the agent raise ends its own episode only, and an episode's ending never depends on which others
    shared its batch. A batch that is not one reply per turn (the wrong count, or not a sequence) is an
    agent that breaks its contract: all its turns fail, unasked again.
    """
    try:
        batch = agent.act(turns)
        replies = None if batch is None or isinstance(batch, str | bytes | dict | Reply) else list(batch)
    except Exception as exc:  # the agent raised, or its generator of replies did
        if len(turns) == 1:
            return [_Raised(_error_text(exc))]
        half = len(turns) // 2
        return _ask(agent, turns[:half]) + _ask(agent, turns[half:])
    n = len(turns)
    if replies is None:
        problem: Exception = TypeError(
            f"act must return a sequence of {n} replies, one per turn, got {type(batch).__name__}"
        )
    elif len(replies) != n:
        problem = ValueError(f"the agent returned {len(replies)} replies for {n} turns")
    else:
        return replies
    return [_Raised(_error_text(problem))] * n


def _finish(live: _Live, ending: Ending, answer: str | None = None, judged: str | None = None) -> Episode:
    """The finished episode; ``judged`` is the whole answer where ``answer`` (stored) was cut."""
    env = live.env
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
    if verdict is not None:  # an env that judges itself (BFCL's checker) counts the state its own way
        return episode
    idempotent = {t.name for t in env.domain.tools_for(env.task) if getattr(t, "idempotent", False)}
    outcome = audit(episode.outcome, env.task, writes, idempotent)  # side effects, whatever the check said
    return episode if outcome == episode.outcome else episode.model_copy(update={"outcome": outcome})


def _start(agent: Any, env: Env) -> _Live | Episode:
    """A new episode, its reference agent briefed; the ended episode if the case would not start (a
    perturbation or a world that fails on this task) or the briefing failed."""
    # An opaque id: a task id names the family (``unknown_place``), which would tell solvability.
    episode_id = f"ep{next(_episode_ids)}"
    try:
        ep = _Live(env, episode_id, env.reset(), env.tool_specs(), onsets=env.onsets())
    except Exception as exc:
        return _failed(_Live(env, episode_id, [], []), f"{START_FAILED}: {_error_text(exc)}")
    try:
        brief(agent, ep.episode_id, env.task)  # a reference agent's own channel; others get nothing
    except Exception as exc:
        _close(agent, [ep.episode_id])
        return _failed(ep, f"brief: {_error_text(exc)}")
    return ep


def run_episodes(
    agent: Any,
    envs: Sequence[Env],
    max_steps: int | Sequence[int] = DEFAULT_MAX_STEPS,
    window: int | None = None,
    on_end: Callable[[int, Episode], None] | None = None,
) -> list[Episode]:
    """Run one episode per env, in lockstep: each round asks the agent for one batch of replies.

    ``max_steps`` is one step budget for every episode, or one per env. ``window`` bounds how many
    episodes run at once (``None``: all of them): as one ends, the next env starts in its place, so a
    round never waits on a few long episodes while others could run beside them (a model agent's batch
    stays full). ``on_end(i, episode)`` is called as the episode of ``envs[i]`` ends, before the next
    round (the episode cache stores it there, so a killed run loses only the episodes in flight).

    The agent sees turns (the conversation and the tool specs) only; an agent that defines
    ``brief`` (a :class:`~sandbox.agent.Reference`) is also told each task before its first turn.

    Garbage from the agent is an outcome, never an exception: a reply that cannot be read ends
    its episode as ``parse_error``; a batch that raises is asked again in smaller parts, and a turn
    the agent still raises on, alone, ends its episode as ``agent_error``.
    """
    agent = as_agent(agent)
    budgets = [max_steps] * len(envs) if isinstance(max_steps, int) else list(max_steps)
    if len(budgets) != len(envs):
        raise UsageError(f"max_steps: {len(budgets)} budgets for {len(envs)} envs; give one, or one per env")
    if window is not None and window < 1:
        raise UsageError(f"window must be at least 1 episode, got {window}")
    done: dict[int, Episode] = {}

    def end(i: int, episode: Episode) -> None:
        done[i] = episode
        if on_end is not None:
            on_end(i, episode)

    if (workers := _concurrency(agent)) > 1 and len(envs) > 1:
        _run_independently(agent, envs, budgets, workers, end)
        return [done[i] for i in range(len(envs))]
    live: dict[int, _Live] = {}
    waiting = iter(range(len(envs)))

    def fill() -> None:
        while len(live) < (window or len(envs)) and (i := next(waiting, None)) is not None:
            started = _start(agent, envs[i])
            if isinstance(started, Episode):
                end(i, started)
            else:
                live[i] = started

    fill()
    while live:
        order = list(live)
        replies = _ask(agent, [_turn(live[i]) for i in order])
        finished = []
        for i, reply in zip(order, replies, strict=True):
            ep = live[i]
            ended = _failed(ep, reply.error) if isinstance(reply, _Raised) else _advance(ep, reply, budgets[i])
            if ended is not None:
                del live[i]
                finished.append(ep.episode_id)
                end(i, ended)
        _close(agent, finished)
        fill()
    return [done[i] for i in range(len(envs))]


def _advance(ep: _Live, reply: Reply | str, max_steps: int) -> Episode | None:
    """Apply one reply to one episode; the finished episode if it ended.

    Never raises. An exception while processing the reply (a bug of the sandbox, a tool or a
    wrapper, met on this reply) ends this episode only, as ``agent_error``: the episode cache
    keeps no such episode, so the case runs again once the bug is fixed.
    """
    try:
        return _apply(ep, reply, max_steps)
    except Exception as exc:
        return _failed(ep, f"the sandbox failed on this reply: {_error_text(exc)}")


def _apply(ep: _Live, reply: Reply | str, max_steps: int) -> Episode | None:
    if isinstance(reply, str):
        reply = Reply(text=reply)
    elif isinstance(reply, RequestFailed):
        return _failed(ep, _cut(redact(clean_text(f"request failed: {reply.error}")), 2000))
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


def _next_turn(ep: _Live, tools: list[ToolSpec]) -> None:
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


def run_episode(agent: Any, env: Env, max_steps: int = DEFAULT_MAX_STEPS) -> Episode:
    return run_episodes(agent, [env], max_steps)[0]


def _concurrency(agent: Any) -> int:
    """How many turns the agent answers at once, each on its own (its ``concurrency``); 1 if it does not say."""
    n = getattr(agent, "concurrency", 1)
    return n if isinstance(n, int) and not isinstance(n, bool) else 1


def _run_independently(
    agent: Any, envs: Sequence[Env], budgets: Sequence[int], workers: int, end: Callable[[int, Episode], None]
) -> None:
    """Run one episode per env, each advancing as soon as its own reply arrives; ``end(i, episode)``
    is called (in this thread) as each ends.

    For agents whose ``concurrency > 1`` says they answer turns independently (an HTTP agent sends
    one request per turn): ``workers`` threads each run one episode at a time through
    ``agent.act([turn])``, so no episode waits for another's slow request, as a lockstep round waits
    for its slowest. Same start, same ``_advance`` and same errors per episode as the lockstep
    runner, so a deterministic agent gets the same episodes from both.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    started = [_start(agent, env) for env in envs]

    def run(ep: _Live | Episode, max_steps: int) -> Episode:
        while isinstance(ep, _Live):
            [reply] = _ask(agent, [_turn(ep)])
            ended = _failed(ep, reply.error) if isinstance(reply, _Raised) else _advance(ep, reply, max_steps)
            if ended is not None:
                _close(agent, [ep.episode_id])
                return ended
        return ep

    with ThreadPoolExecutor(max_workers=min(workers, len(started)), thread_name_prefix="episode") as pool:
        futures = {pool.submit(run, ep, budget): i for i, (ep, budget) in enumerate(zip(started, budgets, strict=True))}
        for future in as_completed(futures):
            end(futures[future], future.result())


__all__ = ["Episode", "Step", "Task", "run_episode", "run_episodes"]
