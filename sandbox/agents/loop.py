"""Agents that own their loop, in process: :class:`LoopAgent` hands them the episode's tools as callables.

An agent built with a framework (LangGraph, pydantic-ai, the OpenAI Agents SDK...) runs its own loop: it
takes a request and a set of tools, calls the tools as its model decides, and returns its final answer.
``LoopAgent(run)`` tests such an agent as it is: ``run(request, tools) -> answer`` is called once per
episode (once per user turn of a task of several), in a thread of its own, with ``tools`` the episode's
tools as perturbed (names, descriptions, JSON schemas), each an :class:`EpisodeTool` bound to that
episode. A call goes through the sandbox's env as this agent's move, so the episode is recorded, judged,
cached and shrunk like any agent's; its observation comes back as the call's result text, an error
included (``{"error": ..., "message": ...}``), never as an exception that would end the framework's run.

The adapters in :mod:`sandbox.agents.frameworks` turn :class:`EpisodeTools` into each framework's own tool
type. Where the tool list changes mid-episode (drift), ``tools`` changes in place before the framework's
next step, and ``tools.on_change`` tells the adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from sandbox.agent import ToolSpec, Turn
from sandbox.agents.session import LoopSession, SessionAgent


class EpisodeTool:
    """One tool of one episode, as the agent sees it; calling it runs the call in that episode.

    ``tool(**arguments)`` or ``tool.call(arguments)`` returns the observation text. ``arguments`` may also
    be the JSON text a model wrote: the env reads it as it reads any agent's, a malformed one included.
    """

    def __init__(self, spec: ToolSpec, session: LoopSession) -> None:
        function = spec.get("function", spec)
        self.name: str = function["name"]
        self.description: str = function.get("description") or ""
        self.parameters: dict[str, Any] = dict(function.get("parameters") or {"type": "object", "properties": {}})
        self.spec = spec
        self._session = session

    def call(self, arguments: dict[str, Any] | str) -> str:
        return self._session.call(self.name, arguments)

    def __call__(self, **arguments: Any) -> str:
        return self.call(arguments)

    def __repr__(self) -> str:
        return f"EpisodeTool({self.name!r})"


class EpisodeTools(Sequence[EpisodeTool]):
    """The tools of one episode, in the order the agent is shown them; current as of the agent's last step.

    ``episode_id`` is the episode's opaque name (it says nothing about the task). ``version`` counts the
    changes of the list; ``on_change(callback)`` has ``callback(tools)`` called on each, before the calls
    that wait are answered, so the framework's next step can see the new list.
    """

    def __init__(self, episode_id: str, session: LoopSession, model_route: Any = None) -> None:
        self.episode_id = episode_id
        self.version = 0
        self._session = session
        self._model_route = model_route
        self._model_urls: dict[str, tuple[str, str]] = {}
        self._tools = [EpisodeTool(spec, session) for spec in session.tool_specs()]
        self._listeners: list[Callable[[EpisodeTools], None]] = []

    def refresh(self, specs: Sequence[ToolSpec]) -> None:
        self._tools = [EpisodeTool(spec, self._session) for spec in specs]
        self.version += 1
        for listener in self._listeners:
            listener(self)

    def on_change(self, callback: Callable[[EpisodeTools], None]) -> None:
        self._listeners.append(callback)

    def model_url(self, url: str) -> str:
        """The base URL the framework's model should use in this episode: ``url`` (an OpenAI-compatible server's,
        ``.../v1``) itself, or, where the case injects faults into the agent's own model, the LLM proxy's address
        for this episode in front of it. Point the model's client at it in ``run``, once per episode."""
        if self._model_route is None:
            return url
        if url not in self._model_urls:
            from sandbox.proxy.llm_serve import episode_url

            self._model_urls[url] = episode_url(url, self._model_route)
        return self._model_urls[url][0]

    @property
    def model_routed(self) -> bool:
        """Whether the case injects model faults and ``run`` asked :meth:`model_url` for its model's address."""
        return self._model_route is None or bool(self._model_urls)

    def close_model_urls(self) -> None:
        from sandbox.proxy.llm_serve import close_episode

        for url, (_, token) in self._model_urls.items():
            close_episode(url, token)

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools as chat-template specs (``{"type": "function", "function": {...}}``)."""
        return [tool.spec for tool in self._tools]

    def get(self, name: str) -> EpisodeTool | None:
        return next((tool for tool in self._tools if tool.name == name), None)

    def call(self, name: str, arguments: dict[str, Any] | str) -> str:
        """A call by name: one the list does not hold goes to the env all the same, which says so."""
        return self._session.call(name, arguments)

    def __getitem__(self, index: Any) -> Any:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[EpisodeTool]:
        return iter(self._tools)

    def __repr__(self) -> str:
        return f"EpisodeTools({[tool.name for tool in self._tools]})"


class Loop(Protocol):
    """An agent that owns its loop: the request and the episode's tools in, its final answer out."""

    def __call__(self, request: str, tools: EpisodeTools) -> str: ...


class LoopAgent(SessionAgent):
    """A sandbox agent whose moves are made by ``run(request, tools) -> answer``; see the module's docstring.

    ``timeout``: seconds ``run`` may take between two moves (a call or its answer). ``name`` names it in
    reports and in its cache key, with ``run``'s code and its own code (its module and the project modules
    it imports).
    """

    def __init__(self, run: Loop, name: str | None = None, timeout: float = 60.0) -> None:
        self.run = run
        self.name = name or getattr(run, "__qualname__", type(run).__name__)
        self.timeout = timeout

    def fingerprint(self) -> str:
        from sandbox.fingerprint import function_key

        return f"loop-agent:{self.name}:{function_key(self.run, module_source=True)}"

    def route_model(self, episode_id: str, route: Any) -> None:
        """The case injects model faults: ``tools.model_url(URL)`` will give ``run`` the LLM proxy's address."""
        vars(self).setdefault("_model_routes", {})[episode_id] = route

    def open(self, turn: Turn) -> LoopSession:
        route = vars(self).get("_model_routes", {}).pop(turn.episode_id, None)

        def play(request: str) -> str:
            answer = self.run(request, tools)
            if not tools.model_routed:
                raise RuntimeError(
                    "this case injects faults into the agent's own model, but run never asked tools.model_url(URL) "
                    "for its model's address, so none reached it: build the model's client on tools.model_url(URL)"
                )
            return answer

        session = LoopSession(play, turn, f"loop agent {self.name}")
        tools = EpisodeTools(turn.episode_id, session, route)
        session.on_tools = tools.refresh
        if route is not None:
            session.closers.append(tools.close_model_urls)
        return session.start(turn)

    def close(self, episode_ids: Sequence[str]) -> None:
        routes = vars(self).get("_model_routes", {})
        for episode_id in episode_ids:
            routes.pop(episode_id, None)
        super().close(episode_ids)


__all__ = ["EpisodeTool", "EpisodeTools", "Loop", "LoopAgent"]
