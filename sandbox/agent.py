"""The agent protocol: a batch of conversations in, a batch of replies out.

Taking a batch lets a model agent generate for many episodes in one forward pass and an HTTP
agent send its requests concurrently. ``Turn.episode_id`` is stable across an episode's turns,
so an agent can keep per-episode state (a model keeps its KV cache); ``close`` tells it which
episodes ended, so it can free that state. An agent whose ``concurrency`` is an int above 1 says
it answers turns independently (an HTTP agent): the runner then keeps that many episodes going at
once, each asking for its next reply as soon as its own last one arrived: by ``submit(turn)`` (a
``concurrent.futures.Future`` of the reply) where the agent defines it, all from one thread, else by
``act([turn])`` from a thread per episode.

A turn holds only what an agent may see: the conversation and the tool specs. Privileged facts
(the task: its gold plan, gold answer, solvability) reach a reference agent (the oracle, the static
baseline) by their own channel, :class:`Reference`, and never reach any other agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sandbox.errors import UsageError, WrongType

if TYPE_CHECKING:
    from sandbox.task import Task

Message = dict[str, Any]
"""A chat message in the Hugging Face / OpenAI format (``role``, ``content``, ``tool_calls``)."""
ToolSpec = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """What an agent sees when it is its turn in one episode: the conversation and the tool specs.

    Nothing else: ``episode_id`` is an opaque name (it says nothing about the task), and there is
    no side channel (no ``info``). An agent that needs the task is a :class:`Reference`.
    """

    episode_id: str
    messages: list[Message]
    tools: list[ToolSpec]


@runtime_checkable
class Reference(Protocol):
    """A reference agent: one that is told each episode's task, gold plan and answer included.

    The runner calls ``brief(episode_id, task)`` once per episode, before its first turn, on any
    agent that defines ``brief``, and ``close`` when the episode ends; the agent should forget the
    task there. The channel runs one way, from the runner to the agent, and only to agents that
    ask for it by defining ``brief``: a model or an HTTP agent never gets it. Because it knows the
    answer, a report of such an agent is a reference row (an upper bound such as the oracle, a
    baseline such as the static agent), not a measurement of a model.
    """

    def brief(self, episode_id: str, task: Task) -> None: ...


class Briefed:
    """The memory of a :class:`Reference` agent: each episode's task, from ``brief`` to ``close``.

    Kept per episode id, so one agent object can run many batches, in turn or at once. It needs no
    ``__init__`` (subclasses that define their own need not call it).
    """

    def brief(self, episode_id: str, task: Task) -> None:
        self._briefs[episode_id] = task

    def close(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            self._briefs.pop(episode_id, None)

    def task_for(self, episode_id: str) -> Task:
        """The task of ``episode_id``, as briefed; a :class:`LookupError` that says how to brief otherwise."""
        try:
            return self._briefs[episode_id]
        except KeyError:
            raise LookupError(
                f"{type(self).__name__} was not briefed on episode {episode_id!r}: it is a reference agent, "
                f"which needs each task; run it with sandbox.run_episodes, or call brief(episode_id, task) first"
            ) from None

    @property
    def _briefs(self) -> dict[str, Task]:
        return vars(self).setdefault("_briefed_tasks", {})


@dataclass
class Reply:
    """An agent's reply: text (possibly holding ``<tool_call>`` blocks) and/or structured calls.

    ``tool_calls`` takes OpenAI-style structured calls from HTTP agents:
    ``[{"id": ..., "function": {"name": ..., "arguments": "<json>" or {...}}}]``.
    ``meta`` carries what a trainer needs (token ids, log-probabilities); the runner keeps it.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class RequestFailed:
    """Stands in for the reply of one episode whose request failed (a server that did not answer or
    answered garbage); the runner ends just that episode as ``agent_error`` with ``error`` as its cause."""

    def __init__(self, error: str) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"RequestFailed({self.error})"


@runtime_checkable
class Agent(Protocol):
    """Anything with ``act``; ``fingerprint`` keys the episode cache, ``close`` frees state.

    An ``act`` that raises is asked again about the same turns in smaller batches (down to one turn),
    so it should keep nothing from a call that raised; one episode's failure is better given as a
    :class:`RequestFailed` in its place.
    """

    def act(self, turns: Sequence[Turn]) -> Sequence[Reply | RequestFailed | str]: ...


def fingerprint(agent: Any) -> str:
    """The agent's cache key: its ``fingerprint()`` if it has one, else what decides its behaviour.

    That is its source and configuration for an object, its code for a plain function (wrapped by
    :func:`as_agent` first, so two functions never share a key); see :mod:`sandbox.fingerprint`,
    and its ``openagent_version`` attribute for controlling invalidation by hand.
    """
    from sandbox.fingerprint import agent_key

    return agent_key(as_agent(agent))


def close(agent: Any, episode_ids: Sequence[str]) -> None:
    closer = getattr(agent, "close", None)
    if callable(closer) and episode_ids:
        closer(list(episode_ids))


def brief(agent: Any, episode_id: str, task: Task) -> None:
    """Tell a :class:`Reference` agent the task of an episode; any other agent is told nothing."""
    # Its class must define ``brief``: a proxy that answers every attribute (``__getattr__``, a mock)
    # has not asked for the answers.
    if callable(getattr(type(agent), "brief", None)):
        agent.brief(episode_id, task)


def route_model(agent: Any, episode_id: str, env: Any) -> None:
    """Where the case of ``env`` injects faults into the agent's own model, hand ``agent`` the episode's route
    (``agent.route_model(episode_id, route)``): its model requests then go through the LLM proxy, which the
    route drives. An agent without ``route_model`` cannot take model faults: that is the user's to fix."""
    try:
        route = env.get_wrapper_attr("model_route")
    except AttributeError:
        return
    if not callable(getattr(type(agent), "route_model", None)):
        raise UsageError(
            f"case {env.describe()} injects faults into the agent's own model, which the LLM proxy does on the "
            f"way from the model's server; {type(agent).__name__} has no model reached over HTTP: use an openai: "
            f"agent, or a LoopAgent whose run takes its model's URL from tools.model_url(URL) (docs/perturbations.md)"
        )
    agent.route_model(episode_id, route())


class FunctionAgent:
    """Adapts a plain ``fn(messages, tools) -> str | Reply`` to the batch protocol.

    Its fingerprint is the function's code (:func:`sandbox.fingerprint.function_key`);
    ``module_source=True`` (what ``module:function`` specs use) adds its module's own code (its file and the
    project modules it imports).
    """

    def __init__(
        self,
        fn: Callable[[list[Message], list[ToolSpec]], Reply | str],
        name: str | None = None,
        module_source: bool = False,
    ):
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", "function")
        self.module_source = module_source

    def act(self, turns: Sequence[Turn]) -> list[Reply | str]:
        return [self.fn(turn.messages, turn.tools) for turn in turns]

    def fingerprint(self) -> str:
        from sandbox.fingerprint import function_key

        return function_key(self.fn, self.name, self.module_source)


def as_agent(obj: Any) -> Agent:
    """An agent as given, or a plain callable wrapped in :class:`FunctionAgent`."""
    # A method on the class settles it; isinstance on a runtime Protocol costs tens of microseconds.
    if callable(getattr(type(obj), "act", None)) or isinstance(obj, Agent):
        return obj
    if callable(obj):
        return FunctionAgent(obj)
    raise WrongType(
        f"expected an agent (an object with act(turns)) or a function fn(messages, tools) -> str, "
        f"got {type(obj).__name__}"
    )
