"""Defining a tool world in a few lines: tools, a state factory and tasks, into a :class:`Domain`.

::

    LIBRARY = sandbox.define_domain(
        "library", tools=[search, get_book, borrow], state=lambda seed: Library(seed),
        tasks=[
            sandbox.UserTask("Who wrote Dune?", answer={"author": "Frank Herbert"}),
            sandbox.UserTask("Borrow Dune.", plan=[sandbox.Call(id="b", tool="borrow", args={"book": "b1"})]),
            sandbox.UserTask("Renew my loan.", unsolvable="missing_capability"),
        ],
    )
    sandbox.register_domain(LIBRARY)

A task succeeds when the final answer quotes its answer fields and, where it expects one, the final
state is the expected one. The gold ``plan``, when given, is replayed against a fresh state as the
domain is defined: ``sources`` name the answer fields it reads (``{"author": "b.author"}``: field
``author`` of call ``b``'s result), and a plan that changes the state makes the state it leaves the
expected end state (compared by :func:`snapshot`). ``end_state`` (a function ``state -> bool`` or a
dict of expected values) and ``check`` (``check(episode, state) -> Outcome``) say it directly.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from sandbox import computed as computing
from sandbox.computed import Computed
from sandbox.domain import DEFAULT_SIZES, Check, Domain, EndState, Expectation
from sandbox.end_state import expected_state, holds, same_as, snapshot
from sandbox.errors import UsageError, WorldFailure, WrongType, did_you_mean
from sandbox.family import Family
from sandbox.state import State
from sandbox.task import Call, Source, Task, Unsolvable
from sandbox.tools import DEFAULT_TIMEOUT, Tool, Toolbox
from sandbox.vocabulary import DomainVocabulary

UNSOLVABLE: tuple[str, ...] = get_args(Unsolvable)


@dataclasses.dataclass(frozen=True)
class UserTask:
    """One task as a user writes it; :func:`define_domain` turns it into a :class:`~sandbox.task.Task`.

    ``answer`` holds values the final answer must quote; ``plan`` the gold calls (``Call`` objects or
    dicts ``{"tool": ..., "args": ...}``, ids ``c1``, ``c2``... when not given); ``sources`` answer
    fields read from the plan's results (a :class:`~sandbox.task.Source` or ``"call_id.path.0.field"``) or
    computed from them (``"c1.results.*.price|sum"``, or a :class:`~sandbox.computed.Computed` function, see
    :mod:`sandbox.computed`);
    ``end_state`` a function of the final state or a dict of values its fields must have; ``check``
    the user's own judge; ``unsolvable`` why no agent can do it (then the right act is to refuse).
    ``seed`` is given to the state factory for the task's episodes.
    """

    query: str
    answer: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    plan: Sequence[Call | Mapping[str, Any]] = ()
    sources: Mapping[str, Source | str | Computed] = dataclasses.field(default_factory=dict)
    end_state: EndState | Mapping[str, Any] | None = None
    check: Check | None = None
    unsolvable: Unsolvable | None = None
    id: str | None = None
    family: str = "user"
    seed: int = 0


_FIELDS = tuple(f.name for f in dataclasses.fields(UserTask))


HEADER = "openagent"
"""The key of a tasks file's header: a first JSONL line ``{"openagent": {...}}`` (or a YAML mapping's key beside
``tasks``) holding how the domain is run (an MCP server's ``reset``, ``inspect``, ``roles``, the step budget)."""


def load_tasks(path: str | Path) -> list[UserTask]:
    """Tasks from a JSONL file (one object per line, the fields of :class:`UserTask` but ``check``), or
    from a YAML file (``.yaml``/``.yml``: a list of the same objects, or a mapping with ``tasks`` and a
    header; needs ``pyyaml``). A header (:data:`HEADER`) is left out: :func:`load_header` reads it."""
    return [_user_task(where, item) for where, item in _rows(Path(path))[1]]


def load_header(path: str | Path) -> tuple[str, Any]:
    """Where a tasks file's header is (for messages) and what it holds (``None`` without one)."""
    return _rows(Path(path))[0]


def _rows(path: Path) -> tuple[tuple[str, Any], list[tuple[str, Any]]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise UsageError(
                f"{path}: reading YAML needs pyyaml (pip install pyyaml); or write the tasks as JSONL"
            ) from None
        items = yaml.safe_load(text) or []
        header = (f"{path} {HEADER}", None)
        if isinstance(items, dict) and set(items) <= {"tasks", HEADER}:
            header, items = (f"{path} {HEADER}", items.get(HEADER)), items.get("tasks") or []
        if not isinstance(items, list):
            kind = type(items).__name__
            raise UsageError(f"{path}: expected a list of tasks (or 'tasks' and '{HEADER}'), got {kind}")
        return header, [(f"{path} item {i + 1}", item) for i, item in enumerate(items)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                rows.append((f"{path}:{n}", json.loads(line)))
            except ValueError as exc:
                raise UsageError(f"{path}:{n}: not a JSON object ({exc})") from None
    if rows and isinstance(rows[0][1], dict) and set(rows[0][1]) == {HEADER}:
        return (rows[0][0], rows[0][1][HEADER]), rows[1:]
    return (str(path), None), rows


def _user_task(where: str, item: Any) -> UserTask:
    if not isinstance(item, dict):
        raise UsageError(f"{where}: a task is an object with a 'query', got {type(item).__name__}")
    for key in item:
        if key not in _FIELDS or key == "check":
            raise UsageError(f"{where}: {did_you_mean('task field', key, [f for f in _FIELDS if f != 'check'])}")
    if "query" not in item:
        raise UsageError(f"{where}: a task needs a 'query'")
    return UserTask(**item)


def define_domain(
    name: str,
    tools: Iterable[Tool | Callable[..., Any]],
    *,
    state: Callable[[int], Any] | None = None,
    tasks: Iterable[UserTask | Task] | str | Path | None = None,
    families: Iterable[Family] | None = None,
    world: Callable[[int], Any] | None = None,
    sizes: Mapping[str, int] | None = None,
    vocabulary: DomainVocabulary | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Domain:
    """A domain from its tools (:class:`~sandbox.tools.Tool` objects or typed functions, see
    :func:`sandbox.tool`), a state factory ``state(seed)`` (a fresh, deterministic object per episode),
    and its tasks: a list (:class:`UserTask` objects, or a JSONL/YAML file of them; any number, 1 is
    fine) or task ``families`` drawn over ``world(seed)``, a read-only world shared by episodes; ``vocabulary``,
    what it tells the perturbations and the oracle about its words (:class:`~sandbox.vocabulary.DomainVocabulary`).

    ``timeout``: seconds a call of a tool given as a function may take before it fails as a hung tool, as an
    MCP server's call does (``None``: no deadline; a :class:`~sandbox.tools.Tool` keeps its own).

    Misuse fails here, with what to fix: a gold call naming no tool, a typo'd argument, a source
    path its result lacks. Register the domain (:func:`sandbox.register_domain`) to reach it by name.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise UsageError(f"a domain name is letters, digits, '_', '.' or '-', got {name!r}")
    built = tuple(t if isinstance(t, Tool) else Tool.from_function(t, timeout=timeout) for t in tools)
    seen: set[str] = set()
    for t in built:
        if t.name in seen:
            raise UsageError(f"domain {name!r}: two tools are named {t.name!r}")
        seen.add(t.name)
    if (tasks is None) == (families is None):
        raise UsageError(f"domain {name!r}: give its tasks (a list or a file) or its task families, one of them")
    if families is not None:
        families = tuple(families)
        if not families:
            raise UsageError(f"domain {name!r}: no task families given")
        built = tuple(_learned(t, set(), set(), stateless=state is None) for t in built)
        return Domain(name, world, built, families, new_state=state, sizes=dict(sizes or DEFAULT_SIZES),
                      vocabulary=vocabulary)  # fmt: skip
    if isinstance(tasks, (str, Path)):
        tasks = load_tasks(tasks)
    specs = list(tasks)  # type: ignore[arg-type]  # not None here: a domain of families returned above
    if not specs:
        raise UsageError(f"domain {name!r}: no tasks given; one is enough")
    listed, expectations, writers, readers = _build(name, built, state, world, specs)
    built = tuple(_learned(t, writers, readers, stateless=state is None) for t in built)
    return Domain(name, world, built, (), new_state=state, listed=listed, expectations=expectations,
                  vocabulary=vocabulary)  # fmt: skip


def _learned(tool: Tool, writers: set[str], readers: set[str], stateless: bool) -> Tool:
    """``tool`` with the role the gold plans showed: a write where a gold call changed the state, a lookup where
    gold calls left a state that can be seen unchanged, or where the domain has no state to change."""
    if tool.name in writers and tool.role == "lookup":
        return dataclasses.replace(tool, role="write", role_known=True)
    if not tool.role_known and (stateless or tool.name in readers):
        return dataclasses.replace(tool, role_known=True)
    return tool


def _build(
    name: str, tools: tuple[Tool, ...], state: Callable[[int], Any] | None, world: Callable[[int], Any] | None,
    specs: list[UserTask | Task],
) -> tuple[tuple[Task, ...], dict[str, Expectation], set[str], set[str]]:  # fmt: skip
    toolbox = Toolbox({t.name: t for t in tools})
    listed: dict[str, Task] = {}
    expectations: dict[str, Expectation] = {}
    writers: set[str] = set()
    readers: set[str] = set()
    for i, spec in enumerate(specs):
        if isinstance(spec, Task):
            task, expectation = spec.model_copy(update={"domain": name}), Expectation()
        elif isinstance(spec, UserTask):
            task, expectation = _task(name, i, spec, toolbox, state, world, (writers, readers), listed)
        else:
            raise WrongType(f"domain {name!r}: task {i + 1} is a {type(spec).__name__}; give a sandbox.UserTask")
        if task.id in listed:
            raise UsageError(f"domain {name!r}: two tasks have the id {task.id!r}; give each its own id=")
        listed[task.id] = task
        if expectation.end_state is not None or expectation.check is not None or expectation.computed:
            expectations[task.id] = expectation
    return tuple(listed.values()), expectations, writers, readers


def _task(
    domain: str, i: int, spec: UserTask, toolbox: Toolbox, state: Callable[[int], Any] | None,
    world: Callable[[int], Any] | None, roles: tuple[set[str], set[str]], listed: Mapping[str, Task],
) -> tuple[Task, Expectation]:  # fmt: skip
    # Ids carry the domain's name, as the built-in ones do: caches of the core key by task id.
    task_id = spec.id if spec.id and spec.id.startswith(f"{domain}-") else f"{domain}-{spec.id or _slug(spec.query)}"
    if task_id in listed and not spec.id:
        task_id = next(f"{task_id}-{n}" for n in range(2, len(listed) + 3) if f"{task_id}-{n}" not in listed)
    where = f"domain {domain!r}, task {task_id!r}"
    if spec.unsolvable is not None and spec.unsolvable not in UNSOLVABLE:
        raise UsageError(f"{where}: {did_you_mean('unsolvable reason', spec.unsolvable, UNSOLVABLE)}")
    if spec.unsolvable is not None and (spec.answer or spec.sources or spec.end_state is not None or spec.check):
        raise UsageError(f"{where}: an unsolvable task has no answer, sources, end state or check; it is judged by "
                         "refusal alone (the right act is to refuse)")  # fmt: skip
    plan = tuple(_call(where, n, c) for n, c in enumerate(spec.plan))
    ids = [c.id for c in plan]
    sources = {key: _source(where, key, src, ids) for key, src in spec.sources.items()}
    functions = {key: src for key, src in spec.sources.items() if isinstance(src, Computed)}
    for key, src in sources.items():
        for call in src.computed or (src.call,):
            if call not in ids:
                raise UsageError(f"{where}: source {key!r} reads call {call!r}; {did_you_mean('call', call, ids)}")
    answer = {str(k): str(v) for k, v in spec.answer.items()}
    end_state = expected_state(where, spec.end_state)
    if plan:
        draft = Task(id=task_id, domain=domain, family=spec.family, split="test", seed=spec.seed, params={},
                     phrasing=0, query=spec.query, plan=plan, answer={}, sources={})  # fmt: skip
        results, before, after, changed, read = _replay(where, draft, toolbox, state, world, spec.unsolvable is None,
                                                        end_state)  # fmt: skip
        roles[0].update(changed)
        roles[1].update(read)
        for key, src in sources.items():
            value = _computed(where, key, src, results, functions.get(key))
            if value is None and not (src.reduce or src.computed):
                raise UsageError(f"{where}: source {key!r}: the result of call {src.call!r} has no {src.path!r}: "
                                 f"{json.dumps(results.get(src.call), default=str)[:300]}")  # fmt: skip
            if value is None:
                raise UsageError(f"{where}: source {key!r} gives nothing from the results of "
                                 f"{', '.join(src.computed or (src.call,))}: a value missing, one that is no number, "
                                 f"or an argmax that ties: {json.dumps(results, default=str)[:300]}")  # fmt: skip
            text = computing.text(src, value)
            if key in answer and answer[key] != text:
                raise UsageError(f"{where}: answer {key!r} is {answer[key]!r} but the plan gives {text!r}")
            answer[key] = text
        if end_state is None and spec.unsolvable is None and before != after:
            end_state = same_as(after)
    return (
        Task(id=task_id, domain=domain, family=spec.family, split="test", seed=spec.seed, params={}, phrasing=0,
             query=spec.query, plan=plan, answer=answer, sources=sources, unsolvable=spec.unsolvable),
        Expectation(end_state, spec.check, functions),
    )  # fmt: skip


def _replay(
    where: str, task: Task, toolbox: Toolbox, state: Callable[[int], Any] | None, world: Callable[[int], Any] | None,
    solvable: bool, end_state: EndState | None = None,
) -> tuple[dict[str, Any], Any, Any, set[str], set[str]]:  # fmt: skip
    """The gold plan run against a fresh state: each call's result, the state's snapshot before and after,
    the tools whose calls changed the state (its snapshot, or whether the task's ``end_state`` holds: a write
    to a store the snapshot does not show), and those whose calls left a state that shows something (not
    empty: an MCP server's without ``inspect`` shows nothing) unchanged."""
    episode = State(data=None if state is None else state(task.seed))
    the_world = None if world is None else world(task.seed)
    before = snapshot(episode.data)
    results: dict[str, Any] = {}
    changed: set[str] = set()
    read: set[str] = set()
    for wave in task.waves():
        for call in wave:
            prior, held = snapshot(episode.data), holds(end_state, episode.data)
            try:
                result = toolbox.call(the_world, episode, call.tool, dict(call.args))
            except WorldFailure as exc:
                raise UsageError(f"{where}: the server failed while gold call {call.id!r} ({call.tool}) was replayed, "
                                 f"before any episode: {exc}; fix the server and run again") from None  # fmt: skip
            if not result.ok and (solvable or result.error in ("unknown_tool", "invalid_arguments")):
                raise UsageError(
                    f"{where}: gold call {call.id!r} ({call.tool}) failed: {result.error}: {result.message}"
                )
            results[call.id] = result.content
            holding = holds(end_state, episode.data)
            if snapshot(episode.data) != prior or (held is not None and holding is not None and held != holding):
                changed.add(call.tool)
            elif result.ok and prior not in (None, {}, []):
                read.add(call.tool)
    return results, before, snapshot(episode.data), changed, read


def _call(where: str, n: int, call: Call | Mapping[str, Any]) -> Call:
    if isinstance(call, Call):
        return call
    if not isinstance(call, Mapping) or "tool" not in call:
        raise UsageError(f"{where}: gold call {n + 1} needs a 'tool' (and 'args'), got {call!r}")
    return Call(id=call.get("id", f"c{n + 1}"), tool=call["tool"], args=dict(call.get("args", {})),
                after=tuple(call.get("after", ())))  # fmt: skip


def _source(where: str, key: str, src: Source | str | Computed | Mapping[str, Any], ids: Sequence[str]) -> Source:
    if isinstance(src, Computed):
        if not callable(src.fn):
            raise WrongType(f"{where}: source {key!r}: Computed takes a function of the results, got {src.fn!r}")
        calls = tuple(src.calls) or tuple(ids)
        if not calls:
            raise UsageError(f"{where}: source {key!r} is computed from the plan's results, but the task has no plan")
        return Source(call=calls[-1], computed=calls)
    if isinstance(src, Source):
        source = src
    elif isinstance(src, Mapping):
        source = Source(**src)
    else:
        try:
            source = computing.parse(str(src))
        except ValueError as exc:
            raise UsageError(f"{where}: source {key!r} is {src!r}: {exc}") from None
    problem = computing.check(source)
    if source.computed:
        problem = ("it names calls a function computes from, but gives no function: write sandbox.Computed(fn) in "
                   "Python, or a path with a reduction (e.g. 'c1.results|count')")  # fmt: skip
    if problem is not None:
        raise UsageError(f"{where}: source {key!r}: {problem}")
    return source


def _computed(where: str, key: str, src: Source, results: Mapping[str, Any], function: Computed | None) -> Any:
    """The value of a source over the gold plan's results; a user's function that raises is misuse, said here."""
    if function is None:
        return computing.value(src, results)
    try:
        return function.fn({call: results.get(call) for call in src.computed})
    except Exception as exc:
        raise UsageError(f"{where}: source {key!r}: the function raised {type(exc).__name__}: {exc} on the gold "
                         f"plan's results {json.dumps(results, default=str)[:300]}") from exc  # fmt: skip


def _slug(query: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", query.lower())[:6]) or "task"
