"""Tasks: a query, a gold plan (a dependency graph of calls) and the answer it must give."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from sandbox.errors import UsageError

Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test")
Unsolvable = Literal["missing_capability", "nonexistent_entity", "fatal_error"]
Reduce = Literal["sum", "count", "min", "max", "argmax", "argmin", "keys"]
REDUCTIONS: tuple[Reduce, ...] = get_args(Reduce)


class Call(BaseModel):
    """One call of a gold plan; it may run once the calls named in ``after`` have."""

    model_config = ConfigDict(frozen=True)

    id: str
    tool: str
    args: dict[str, Any]
    after: tuple[str, ...] = ()


class Source(BaseModel):
    """Where an answer value is read: field ``path`` of the observation of call ``call``.

    A computed answer (:mod:`sandbox.computed`) either reduces what the path selects (``reduce``: a ``*`` in the
    path stands for every item of a list or value of a dict; ``pick``, the field of the winning item an
    ``argmax``/``argmin`` gives), or is the value of the domain's function for it
    (a :class:`~sandbox.computed.Computed`) over the results of the calls ``computed`` names."""

    model_config = ConfigDict(frozen=True)

    call: str
    path: str = ""
    reduce: Reduce | None = None
    pick: str | None = None
    computed: tuple[str, ...] = ()

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a plain source dumps as it always has: case keys and the cache key on the task's JSON
        return {k: v for k, v in handler(self).items() if k in ("call", "path") or v not in (None, (), [])}


def read_path(content: Any, path: str) -> Any:
    """``results.0.name`` -> ``content["results"][0]["name"]``: the value a :class:`Source` names;
    ``None`` where the path breaks."""
    for part in path.split("."):
        if isinstance(content, list) and part.isdigit() and int(part) < len(content):
            content = content[int(part)]
        elif isinstance(content, dict) and part in content:
            content = content[part]
        else:
            return None
    return content


class Task(BaseModel):
    """One task instance. ``answer`` holds the values the final answer must quote."""

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    family: str
    split: Split
    seed: int
    params: dict[str, str]
    phrasing: int
    query: str
    plan: tuple[Call, ...]
    answer: dict[str, str]
    sources: dict[str, Source]
    write: Call | None = None
    unsolvable: Unsolvable | None = None

    @property
    def solvable(self) -> bool:
        return self.unsolvable is None

    @property
    def n_calls(self) -> int:
        return len(self.plan)

    def waves(self) -> list[list[Call]]:
        """The plan in dependency order: each wave's calls can be made in parallel."""
        done: set[str] = set()
        pending = list(self.plan)
        waves = []
        while pending:
            wave = [c for c in pending if set(c.after) <= done]
            if not wave:
                raise UsageError(f"task {self.id}: the plan has a cycle or a dangling dependency")
            waves.append(wave)
            done |= {c.id for c in wave}
            pending = [c for c in pending if c.id not in done]
        return waves
