"""The environment of one episode, and the wrapper base that perturbations build on.

Four methods are the surface a wrapper may change (Gymnasium's ``Wrapper`` idea): ``query``
(what the user asks), ``tool_specs`` (what the agent is told about the tools), ``call`` (how a
call is dispatched) and ``observe`` (how a result is rendered for the agent).

A wrapper exposes the attributes of the env it wraps that a stack and the runner need (``task``,
``state``, ``solvable``, ``domain``, ``world``, ``system_prompt``, ``unwrapped``) as properties, and
nothing else: as in Gymnasium 1.x, another attribute of an inner env is reached on purpose, through
``env.unwrapped`` or ``env.get_wrapper_attr(name)``, never silently through the stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sandbox.agent import Message, ToolSpec
from sandbox.domain import Domain, StartFailure
from sandbox.errors import UsageError
from sandbox.prompt import SYSTEM_PROMPT
from sandbox.state import State
from sandbox.task import Task
from sandbox.tools import ToolResult

if TYPE_CHECKING:
    from sandbox.judge import Ending, Outcome
    from sandbox.trajectory import Episode


class Env:
    failure: StartFailure | None = None
    """Why no episode of this env can start (its domain's world or state factory raised); ``reset`` raises it."""

    def __init__(self, domain: Domain, task: Task, system_prompt: str = SYSTEM_PROMPT) -> None:
        self.domain = domain
        self.task = task
        self.system_prompt = system_prompt
        try:
            self.world = domain.world(task.seed)
            self.state = self.new_state()
        except StartFailure as failure:
            self.world, self.state, self.failure = None, State(), failure

    @property
    def unwrapped(self) -> Env:
        return self

    def reset(self) -> list[Message]:
        """Start the episode afresh: a new state and the opening messages; raises
        :class:`~sandbox.domain.StartFailure` where the domain's world or state factory fails."""
        base = self.unwrapped
        if base.failure is not None:
            raise base.failure
        base.state = base.new_state()
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": self.query()}]

    @property
    def solvable(self) -> bool:
        """Whether the case can be completed; a wrapper that makes it impossible says False."""
        return self.task.solvable

    def new_state(self) -> State:
        """A fresh state for an episode: the sandbox's bookkeeping around the domain's own state object,
        made from the task's seed by the domain's state factory."""
        return State(data=self.domain.fresh_state(self.task.seed))

    def end_state_ok(self) -> bool | None:
        """Whether the state ends as the task expects; ``None`` when it expects no particular end state."""
        return self.domain.end_state_ok(self.task, self.state)

    def review(self, episode: Episode) -> Episode:
        """The judged episode, with the outcome the task's own check gives, where it has one.

        The check decides only a solvable case: ``episode.solvable`` is the case's solvability as perturbed
        (the outermost env's, which a wrapper that rules the task out changes), and an unsolvable case is left
        to the refusal rules of the common judge.
        """
        check = self.domain.check(self.task)
        if check is None or not episode.solvable:
            return episode
        from sandbox.judge import OUTCOMES

        outcome = check(episode, self.state.data)
        if outcome not in OUTCOMES:
            raise UsageError(
                f"the check of task {self.task.id} returned {outcome!r}; return one of {', '.join(OUTCOMES)}"
            )
        return episode if outcome == episode.outcome else episode.model_copy(update={"outcome": outcome})

    def query(self) -> str:
        return self.task.query

    def tool_specs(self) -> list[ToolSpec]:
        return self.domain.toolbox.specs()

    def call(self, name: str, arguments: Any) -> ToolResult:
        return self.domain.toolbox.call(self.world, self.state, name, arguments)

    def observe(self, result: ToolResult) -> str:
        return result.render()

    def describe(self) -> str:
        """The case in one line: the task, then each wrapper of the stack."""
        return self.task.id

    def next_user_message(self) -> str | None:
        """Called when the agent answers: the user's next message for a task of several user turns
        (the episode goes on, with :meth:`tool_specs` read again), or ``None`` to end it (the default)."""
        return None

    def verdict(self, ending: Ending) -> tuple[Outcome, str] | None:
        """The outcome and why, for an env that judges its own episodes (BFCL's state checker);
        ``None`` (the default) leaves it to :func:`sandbox.judge.judge`."""
        return None

    def wrappers(self) -> list[Wrapper]:
        return []

    def onsets(self) -> frozenset[int]:
        """The turns after which the env changes mid-episode (drift: sandbox.perturbations.drift); none here."""
        return frozenset()

    def get_wrapper_attr(self, name: str) -> Any:
        """``name`` from the outermost env of the stack that has it (Gymnasium's ``get_wrapper_attr``)."""
        return getattr(self, name)


class Wrapper(Env):
    """Delegates the four methods and the attributes listed in the module's docstring to ``env``;
    subclasses override one of the methods."""

    label: str = "wrapper"

    def __init__(self, env: Env) -> None:
        self.env = env

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    @property
    def task(self) -> Task:  # type: ignore[override]  # read-only through a wrapper, by design
        return self.env.task

    @property
    def state(self) -> State:  # type: ignore[override]  # read-only through a wrapper, by design
        return self.unwrapped.state

    @property
    def solvable(self) -> bool:
        return self.env.solvable

    @property
    def domain(self) -> Domain:  # type: ignore[override]  # read-only through a wrapper, by design
        return self.env.domain

    @property
    def world(self) -> Any:
        return self.env.world

    @property
    def system_prompt(self) -> str:  # type: ignore[override]  # read-only through a wrapper, by design
        return self.env.system_prompt

    def get_wrapper_attr(self, name: str) -> Any:
        if name in vars(self) or hasattr(type(self), name):
            return getattr(self, name)
        return self.env.get_wrapper_attr(name)

    def end_state_ok(self) -> bool | None:
        return self.env.end_state_ok()

    def review(self, episode: Episode) -> Episode:
        return self.env.review(episode)

    def query(self) -> str:
        return self.env.query()

    def tool_specs(self) -> list[ToolSpec]:
        return self.env.tool_specs()

    def call(self, name: str, arguments: Any) -> ToolResult:
        return self.env.call(name, arguments)

    def observe(self, result: ToolResult) -> str:
        return self.env.observe(result)

    def describe(self) -> str:
        return f"{self.env.describe()} + {self.label}"

    def next_user_message(self) -> str | None:
        return self.env.next_user_message()

    def verdict(self, ending: Ending) -> tuple[Outcome, str] | None:
        return self.env.verdict(ending)

    def wrappers(self) -> list[Wrapper]:
        return [*self.env.wrappers(), self]

    def onsets(self) -> frozenset[int]:
        return self.env.onsets()


@runtime_checkable
class OwnEnv(Protocol):
    """A domain that makes its own env for a task (``bfcl``: one that owns the task's backend instances)."""

    def make_env(self, task: Task) -> Env: ...


def clean_env(domain: Domain, task: Task) -> Env:
    """The clean env of ``task`` in ``domain``: the domain's own (``bfcl``'s) where it has one."""
    if isinstance(domain, OwnEnv):
        return domain.make_env(task)
    return Env(domain, task)
