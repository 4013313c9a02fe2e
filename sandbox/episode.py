"""Episodes: the runner that asks the agent and drives many in lockstep (what each reply does to an episode is in
``sandbox.live_episode``, the trajectory it records in ``sandbox.trajectory``)."""

from __future__ import annotations

import contextlib
import itertools
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sandbox.agent import Reply, Turn, as_agent, brief, close, route_model
from sandbox.budget import DEFAULT_MAX_STEPS, env_steps  # noqa: F401 - DEFAULT_MAX_STEPS: where it was
from sandbox.env import Env
from sandbox.errors import UsageError, WorldFailure
from sandbox.live_episode import MAX_MESSAGE_CHARS, MAX_STORED_REPLY, Failing, LiveEpisode, advance, error_text, fail
from sandbox.task import Task
from sandbox.trajectory import Episode, Step

_episode_ids = itertools.count()
START_FAILED = "the sandbox failed to start this case"
"""How the error of an episode that never started begins (a perturbation or the domain's code raised)."""


def _turn(ep: LiveEpisode) -> Turn:
    """What the agent may see of an episode: the conversation and the tool specs, never the task."""
    return Turn(ep.episode_id, list(ep.messages), ep.tools)


def _close(agent: Any, episode_ids: Sequence[str]) -> None:
    """Tell the agent these episodes ended. A ``close`` that raises changes nothing: the episodes
    are over and classified already, and the error is the agent's to fix, not the run's to lose."""
    with contextlib.suppress(Exception):
        close(agent, episode_ids)


@dataclass(frozen=True)
class _Raised:
    """What stands in for a reply the agent could not give: the error its episode ends with (``world_error`` where
    what failed under the agent was the world, a tool server it reads through the sandbox)."""

    error: str
    ending: Failing = "agent_error"

    @classmethod
    def of(cls, exc: BaseException) -> _Raised:
        return cls(error_text(exc), _ending(exc))


def _ending(exc: BaseException) -> Failing:
    return "world_error" if isinstance(exc, WorldFailure) else "agent_error"


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
            return [_Raised.of(exc)]
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
    return [_Raised(error_text(problem))] * n


def _start(agent: Any, env: Env) -> LiveEpisode | Episode:
    """A new episode, its reference agent briefed; the ended episode if the case would not start (a
    perturbation or a world that fails on this task) or the briefing failed."""
    # An opaque id: a task id names the family (``unknown_place``), which would tell solvability.
    episode_id = f"ep{next(_episode_ids)}"
    try:
        ep = LiveEpisode(env, episode_id, env.reset(), env.tool_specs(), onsets=env.onsets())
    except Exception as exc:
        return fail(LiveEpisode(env, episode_id, [], []), f"{START_FAILED}: {error_text(exc)}")
    try:
        brief(agent, ep.episode_id, env.task)  # a reference agent's own channel; others get nothing
    except Exception as exc:
        _close(agent, [ep.episode_id])
        return fail(ep, f"brief: {error_text(exc)}", _ending(exc))
    route_model(agent, ep.episode_id, env)  # a case with model faults: the agent's model goes through the LLM proxy
    return ep


def run_episodes(
    agent: Any,
    envs: Sequence[Env],
    max_steps: int | Sequence[int] | None = None,
    window: int | None = None,
    on_end: Callable[[int, Episode], None] | None = None,
) -> list[Episode]:
    """Run one episode per env, in lockstep: each round asks the agent for one batch of replies.

    ``max_steps`` is one step budget for every episode, or one per env; ``None`` (the default) gives each env the
    budget its task's plan and its perturbations call for (:func:`sandbox.budget.env_steps`), as ``Case.run`` and
    ``openagent eval`` do. ``window`` bounds how many
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
    if max_steps is None:
        budgets = [env_steps(env) for env in envs]
    else:
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
        if callable(getattr(agent, "submit", None)):
            _run_submitted(agent, envs, budgets, workers, end)
        else:
            _run_independently(agent, envs, budgets, workers, end)
        return [done[i] for i in range(len(envs))]
    live: dict[int, LiveEpisode] = {}
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
            raised = isinstance(reply, _Raised)
            ended = fail(ep, reply.error, reply.ending) if raised else advance(ep, reply, budgets[i])
            if ended is not None:
                del live[i]
                finished.append(ep.episode_id)
                end(i, ended)
        _close(agent, finished)
        fill()
    return [done[i] for i in range(len(envs))]


def run_episode(agent: Any, env: Env, max_steps: int | None = None) -> Episode:
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
    for its slowest. Same start, same :func:`~sandbox.live_episode.advance` and same errors per episode as the lockstep
    runner, so a deterministic agent gets the same episodes from both.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    started = [_start(agent, env) for env in envs]

    def run(ep: LiveEpisode | Episode, max_steps: int) -> Episode:
        while isinstance(ep, LiveEpisode):
            [reply] = _ask(agent, [_turn(ep)])
            ended = fail(ep, reply.error, reply.ending) if isinstance(reply, _Raised) else advance(ep, reply, max_steps)
            if ended is not None:
                _close(agent, [ep.episode_id])
                return ended
        return ep

    with ThreadPoolExecutor(max_workers=min(workers, len(started)), thread_name_prefix="episode") as pool:
        futures = {pool.submit(run, ep, budget): i for i, (ep, budget) in enumerate(zip(started, budgets, strict=True))}
        for future in as_completed(futures):
            end(futures[future], future.result())


def _run_submitted(
    agent: Any, envs: Sequence[Env], budgets: Sequence[int], window: int, end: Callable[[int, Episode], None]
) -> None:
    """:func:`_run_independently` without a thread per episode, for an agent that also defines
    ``submit(turn)``, a ``concurrent.futures.Future`` of the reply (an HTTP agent on an event loop): up to
    ``window`` episodes at once, driven from this thread, each advancing as its own reply arrives."""
    arrived: queue.SimpleQueue[tuple[int, Future[Any] | BaseException]] = queue.SimpleQueue()
    live: dict[int, LiveEpisode] = {}
    waiting = iter(range(len(envs)))

    def send(i: int) -> None:
        try:
            future = agent.submit(_turn(live[i]))
        except Exception as exc:  # the agent could not even take the turn: its episode ends, the others go on
            arrived.put((i, exc))
            return
        future.add_done_callback(lambda f: arrived.put((i, f)))

    def fill() -> None:
        while len(live) < window and (i := next(waiting, None)) is not None:
            started = _start(agent, envs[i])
            if isinstance(started, Episode):
                end(i, started)
            else:
                live[i] = started
                send(i)

    fill()
    while live:
        i, result = arrived.get()
        ep = live[i]
        try:
            reply = result.result() if isinstance(result, Future) else result
        except Exception as exc:  # the agent's coroutine raised: as a raise in act, its episode ends
            reply = exc
        ended: Episode | None
        if isinstance(reply, BaseException):
            ended = fail(ep, error_text(reply), _ending(reply))
        else:
            ended = advance(ep, reply, budgets[i])
        if ended is None:
            send(i)
            continue
        del live[i]
        _close(agent, [ep.episode_id])
        end(i, ended)
        fill()


__all__ = ["MAX_MESSAGE_CHARS", "MAX_STORED_REPLY", "Episode", "Step", "Task", "run_episode", "run_episodes"]
