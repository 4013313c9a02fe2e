"""``openagent.perturb``: the ``openagent`` marker, ``@given(case=cases(...))`` and ``@settings`` in one."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, reject, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import UnsatisfiedAssumption

from pytest_openagent.strategies import DomainSpec, TierSpec, cases
from sandbox.agent import fingerprint
from sandbox.case import Case, current_runner, install_runner
from sandbox.errors import UsageError, WrongType
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EpisodeCache
from sandbox.evaluation.degradation import perturbation_seed
from sandbox.evaluation.draw import domain_label
from sandbox.evaluation.report import Record
from sandbox.evaluation.runner import EpisodeBudgetSpent, Runner
from sandbox.task import Task

if TYPE_CHECKING:
    from sandbox.episode import Episode

F = TypeVar("F", bound=Callable[..., Any])
Relation = Literal["invariant"]
RELATIONS: tuple[str, ...] = ("invariant",)
DEFAULT_MAX_EXAMPLES = 25
DEFAULT_DATABASE_DIR = DEFAULT_CACHE_DIR / "hypothesis"


class SessionDatabase(ExampleDatabase):
    """Hypothesis' example database, in the cache folder the pytest session chose.

    The folder is only known once pytest is configured, after test modules have applied their
    decorators, so each call resolves it. Being explicit in ``@settings``, it also survives the
    ``CI`` variable, where Hypothesis' built-in ``ci`` profile would drop the database.
    """

    directory: Path | None = None
    _databases: dict[Path, DirectoryBasedExampleDatabase] = {}  # noqa: RUF012

    def _db(self) -> DirectoryBasedExampleDatabase:
        path = (SessionDatabase.directory or DEFAULT_DATABASE_DIR).resolve()
        if path not in self._databases:
            self._databases[path] = DirectoryBasedExampleDatabase(path)
        return self._databases[path]

    def fetch(self, key: bytes) -> Iterator[bytes]:
        yield from self._db().fetch(key)

    def save(self, key: bytes, value: bytes) -> None:
        self._db().save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._db().delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._db().move(src, dest, value)

    def __repr__(self) -> str:
        return "SessionDatabase()"


DATABASE = SessionDatabase()


class Search:
    """How the session's property tests search (``--openagent-search``), set by the session before any test runs:
    ``default`` looks for a failure; ``worst`` also gives Hypothesis' ``target()`` each case's degradation, and
    perturbation seeds come from ``seed`` instead of the draw (a climb over them meets only ties)."""

    mode: str = "default"
    seed: int = 0


class _Budget:
    """A runner in front of the installed one that runs no more than ``limit`` new episodes in the test (episodes
    the cache holds cost nothing): past it, the case is rejected, so that Hypothesis ends its search and its
    shrinking on what it has found."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    def run(self, agent: Any, case: Case, max_steps: int | None = None) -> tuple[Episode, Episode]:
        if not isinstance(self.inner, Runner):  # a runner of the user's own: it keeps its own costs
            return self.inner.run(agent, case, max_steps)
        return self.inner.run(agent, case, max_steps, budget=self.limit)

    def cached(self, agent: Any, case: Case, max_steps: int | None = None) -> Episode | None:
        return self.inner.cached(agent, case, max_steps) if isinstance(self.inner, Runner) else None


@contextlib.contextmanager
def _budgeted(limit: int | None) -> Iterator[None]:
    """Within it, cases run under the test's episode budget (``max_episodes``); a case past it is rejected."""
    previous = install_runner(_Budget(current_runner(), limit)) if limit is not None else None
    try:
        yield
    except EpisodeBudgetSpent:
        event("episode budget spent")
        reject()
    finally:
        if limit is not None:
            install_runner(previous)


def _events(case: Case) -> None:
    for p in case.perturbations:
        event("perturbation", p.name)
        event("tier", p.tier)


_script_runner: Runner | None = None


def _runner() -> contextlib.AbstractContextManager[object]:
    """The installed runner (the session's); outside a session, a process-wide one with a memory cache,
    so that Hypothesis, replaying or shrinking a test run as a script, still sees the same episodes."""
    global _script_runner
    if current_runner() is not None:
        return contextlib.nullcontext()
    if _script_runner is None:
        _script_runner = Runner(EpisodeCache(None))
    return _script_runner.installed()


class SessionDrift:
    """Whether the pytest session draws drift cases (``--openagent-drift``), for tests that leave ``drift`` unset;
    read at each draw, since the session is configured after test modules applied their decorators."""

    on: bool = False


@st.composite
def _session_cases(
    draw: st.DrawFn, drawn: Callable[[bool, int | None], st.SearchStrategy[Case]], drift: bool | None
) -> Case:
    """A case as the session asks (read at each draw): drift cases under ``--openagent-drift`` where the test left
    ``drift`` unset, and perturbation seeds from the session's seed under ``--openagent-search worst``."""
    seed = perturbation_seed(Search.seed) if Search.mode == "worst" else None
    if drift is not None:
        return draw(drawn(drift, seed))
    if SessionDrift.on:
        try:
            moving = drawn(True, seed)
        except UsageError:  # none of the test's perturbations can drift: its cases stay static
            return draw(drawn(False, seed))
        return draw(moving)
    return draw(drawn(False, seed))


def perturb(
    tier: TierSpec = "all",
    names: str | Iterable[str] | None = None,
    *,
    domain: DomainSpec = "poi",
    split: str = "test",
    tasks: st.SearchStrategy[Task] | Sequence[Task | str] | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    max_stack: int = 1,
    relation: Relation | None = None,
    drift: bool | None = None,
    max_episodes: int | None = None,
) -> Callable[[F], F]:
    """Make a test a property over perturbed cases: the test takes ``case`` (and usually ``agent``).

    ``drift=True`` draws drift cases: perturbations of the tool surface and of interaction that start after turn
    k of the episode (an onset Hypothesis draws and shrinks toward the first turn); ``None`` follows the session's
    ``--openagent-drift`` (where the test's perturbations can drift), ``False`` keeps every case static.

    ``tier`` is a name, a number 1-4, a list or ``"all"``; ``names`` picks perturbations by name.
    ``domain`` is a name, ``module:attribute`` or a :class:`~sandbox.domain.Domain` (registered on the
    way); ``tasks`` narrows its tasks (a strategy, or tasks or task ids), however few.
    ``relation="invariant"`` keeps only tasks the agent solves clean and asserts that it also
    solves the perturbed twin (a metamorphic test): each agent the body runs on the case, else the
    ``agent`` fixture; the test body may add its own checks. A task the agent is already known (from the episode
    cache) to fail clean is rejected without running the perturbed case.

    ``max_episodes`` bounds the new episodes (cases and clean twins not in the episode cache) one run of the test
    may cost, its search and its shrinking together: past it, Hypothesis ends on what it found, the smallest
    failure so far, or a pass on the examples it tried. ``None``: no bound but ``max_examples``.
    """
    if relation is not None and relation not in RELATIONS:
        raise UsageError(f"relation={relation!r} is not known; use None or one of {RELATIONS}")
    if not isinstance(max_examples, int) or max_examples < 1:
        raise UsageError(f"max_examples must be a positive int, got {max_examples!r}")
    if max_episodes is not None and (not isinstance(max_episodes, int) or max_episodes < 1):
        raise UsageError(f"max_episodes must be a positive int or None (no bound), got {max_episodes!r}")
    # The clean case is drawn too (rarely), so that a failure the agent shows with no perturbation shrinks to it; an
    # invariant keeps only tasks the agent solves clean, so its cases are all perturbed.
    min_stack = 1 if relation == "invariant" else 0
    if drift not in (None, True, False):
        raise UsageError(f"drift={drift!r}: use True, False or None (follow --openagent-drift)")

    @functools.cache
    def drawn(moving: bool, seed: int | None) -> st.SearchStrategy[Case]:
        return cases(tier, names, domain=domain, split=split, max_stack=max_stack, min_stack=min_stack, tasks=tasks,
                     drift=moving, seed=seed)  # fmt: skip

    drawn(bool(drift), None)  # a bad argument is an error here, at decoration, not at the first draw
    strategy = _session_cases(drawn, drift)

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        if "case" not in signature.parameters:
            raise WrongType(
                f"@openagent.perturb: {fn.__qualname__} must take a 'case' argument: def {fn.__name__}(agent, case)"
            )
        if relation == "invariant":
            body = _invariant(fn, signature, max_episodes)
        else:

            @functools.wraps(fn)
            def body(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True
                # Hypothesis passes the case by keyword (given(case=...)); bind only when it did not.
                case = kwargs["case"] if "case" in kwargs else signature.bind(*args, **kwargs).arguments["case"]
                _events(case)
                with _runner(), _budgeted(max_episodes):
                    if Search.mode != "worst":
                        return fn(*args, **kwargs)
                    watch = _Watch(current_runner(), case)
                    previous = install_runner(watch)
                    try:
                        result = fn(*args, **kwargs)
                    finally:
                        install_runner(previous)
                    _aim(case, watch.runs)
                    return result

        test = given(case=strategy)(body)
        test = settings(
            max_examples=max_examples,
            deadline=None,
            database=DATABASE,
            phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
            # An invariant rejects the tasks an agent fails clean, a budget the cases past it: neither is a strategy
            # that filters too much.
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.function_scoped_fixture,
                HealthCheck.filter_too_much,
            ],
        )(test)
        mark = pytest.mark.openagent(
            tier=tier, names=names, domain=domain_label(domain), max_examples=max_examples, max_stack=max_stack,
            relation=relation, drift=drift, max_episodes=max_episodes,
        )  # fmt: skip
        return mark(test)

    return decorate


class _Watch:
    """A runner in front of the installed one that keeps the runs of one case: which agent, its episode and its
    clean twin's. The invariant relation checks the agents the test body ran, not the ``agent`` fixture."""

    def __init__(self, inner: Any, case: Case, solved_clean: bool = False) -> None:
        self.inner = inner
        self.case = case
        self.solved_clean = solved_clean
        """Reject the case, before running it, for an agent the cache knows fails its clean twin (an invariant)."""
        self.runs: list[tuple[Any, Episode, Episode]] = []

    def run(self, agent: Any, case: Case, max_steps: int | None = None) -> tuple[Episode, Episode]:
        ours = case is self.case or case.key() == self.case.key()
        if ours and self.solved_clean and case.perturbations and hasattr(self.inner, "cached"):
            twin = self.inner.cached(agent, case.clean(), max_steps)
            if twin is not None and not twin.success:
                reject()
        episode, clean = self.inner.run(agent, case, max_steps)
        if ours:
            self.runs.append((agent, episode, clean))
        return episode, clean


def _aim(case: Case, runs: list[tuple[Any, Episode, Episode]]) -> None:
    """Give Hypothesis' ``target()`` the degradation of the case: the worst over the agents the body ran on it."""
    if not runs:
        return
    from pytest_openagent.search import aim
    from sandbox.evaluation.degradation import degradation

    records = [Record.of("", fingerprint(agent), case, episode, clean) for agent, episode, clean in runs]
    aim(max(records, key=degradation))


def _invariant(fn: Callable[..., Any], signature: inspect.Signature, max_episodes: int | None) -> Callable[..., Any]:
    wants_agent = "agent" in signature.parameters
    if not wants_agent:
        agent = inspect.Parameter("agent", inspect.Parameter.KEYWORD_ONLY)
        outer = signature.replace(parameters=[*signature.parameters.values(), agent])
    else:
        outer = signature

    @functools.wraps(fn)
    def body(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        bound = outer.bind(*args, **kwargs)
        case: Case = bound.arguments["case"]
        fixture = bound.arguments["agent"] if wants_agent else bound.arguments.pop("agent")
        _events(case)
        with _runner(), _budgeted(max_episodes):
            watch = _Watch(current_runner(), case, solved_clean=True)
            previous = install_runner(watch)
            try:
                result = fn(*bound.args, **bound.kwargs)
                if not watch.runs:  # a body that runs no agent on the case leaves the relation to the ``agent`` fixture
                    case.run_with_clean(fixture)
            except (EpisodeBudgetSpent, UnsatisfiedAssumption):  # the case is rejected, not run
                raise
            except Exception:
                # A case that an agent of the body fails clean is outside the relation, whatever the body asserted.
                if not watch.runs:
                    case.run_with_clean(fixture)
                assume(all(clean.success for _, _, clean in watch.runs))
                raise
            finally:
                install_runner(previous)
        for agent, episode, clean in watch.runs:
            assume(clean.success)
            who = "" if agent is fixture else f" (agent {fingerprint(agent)})"
            assert episode.success, (
                f"invariant broken: the agent solves {case.task.id} clean but not under "
                f"{' + '.join(p.label() for p in case.perturbations)}{who}\n{episode.explain()}"
            )
        if Search.mode == "worst":
            _aim(case, watch.runs)
        return result

    body.__signature__ = outer  # type: ignore[attr-defined]  # functions take __signature__, which Callable does not declare
    return body
