"""A perturbation is data (a frozen spec) plus ``apply``, which wraps an environment.

Specs are pydantic models: they print as a short readable label, round-trip through JSON, and
are deterministic given their parameters and ``seed``. Concrete perturbations subclass
:class:`Perturbation`, set the class variables, and register themselves with ``@register``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from sandbox.budget import step_budget  # noqa: F401 - its home before sandbox.budget
from sandbox.env import Env
from sandbox.errors import UsageError
from sandbox.task import Task

Tier = Literal["perception", "interaction", "reasoning", "internalization"]
TIERS: tuple[Tier, ...] = ("perception", "interaction", "reasoning", "internalization")
Shift = Literal["query", "action", "observation", "domain"]
Pool = Literal["train", "eval"]
POOLS: tuple[Pool, ...] = ("train", "eval")

Layer = Literal[
    # The domain: a new world and task, below everything else.
    "domain",
    # The query from another of its family's templates, before any layer edits its words.
    "phrasing",
    # Tools removed, or entities and calls that fail for good.
    "unsolvable",
    # Tools restructured: merged, inverted, split, their arguments nested.
    "merge", "inversion", "split", "restructure",
    # Feedback: what calls return and how they fail (an optional detail changes a lookup's reply too).
    "behaviour", "deception", "optional_detail", "codes", "redirect", "transient", "rate_limit", "missing_values",
    "format",
    # The agent's own model: its replies, perturbed by the LLM proxy (the tools are untouched).
    "model",
    # Surface names and descriptions: they see, and rename, every tool the layers below added.
    "descriptions", "schema", "decoys", "traps", "renaming", "erasure", "name_noise",
    # The query's wording, last.
    "wording",
]  # fmt: skip
LAYERS: tuple[Layer, ...] = get_args(Layer)
"""Where each perturbation sits in a stack, lowest (wrapped first, innermost) first: one list, in one place."""
_LAYER_INDEX: dict[str, int] = {layer: i for i, layer in enumerate(LAYERS)}


class WrapperClass(Protocol):
    """What :attr:`Perturbation.wrapper` holds: a class (a ``PerturbationWrapper``) made as ``wrapper(env, spec)``."""

    def __call__(self, env: Env, spec: Perturbation, /) -> Env: ...


def layer_index(layer: str) -> int:
    """The position of ``layer`` in :data:`LAYERS`; a clear error for a name that is not there."""
    try:
        return _LAYER_INDEX[layer]
    except KeyError:
        raise UsageError(f"Unknown layer {layer!r}. Use one of: {', '.join(LAYERS)}.") from None


def tier_number(tier: Tier) -> int:
    return TIERS.index(tier) + 1


class Perturbation(BaseModel):
    """Base of every perturbation spec.

    Class variables describe the kind; fields are its parameters. ``severity`` runs from
    ``min_severity`` to ``max_severity``; where 0 is allowed it is the identity. ``pool`` picks the
    vocabulary (names, texts, templates) drawn from: ``train`` for PAFT data, ``eval`` for tests.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: ClassVar[str]
    tier: ClassVar[Tier]
    shift: ClassVar[Shift]
    summary: ClassVar[str] = ""
    """What it changes, one line, for the catalogue."""
    expected: ClassVar[str] = ""
    """The right behaviour of an agent under it, one line, for the catalogue."""
    min_severity: ClassVar[int] = 1
    max_severity: ClassVar[int] = 1
    unsolvable: ClassVar[bool] = False
    """True for perturbations that exist to make the task unsolvable (the gold act is to refuse)."""
    mild: ClassVar[str] = ""
    """Why the static baseline is not expected to lose 50 points under it, if that is by design."""
    limits: ClassVar[str] = ""
    """Where it does not apply (``applies_to`` says no), for the catalogue; empty where it applies to every case
    of every domain (with a tool call, for those that act on calls)."""
    layer: ClassVar[Layer] = "descriptions"
    """Where it sits in a stack, one of :data:`LAYERS`: lower layers wrap first (see :func:`apply_stack`)."""
    paft_family: ClassVar[str | None] = None
    """The PAFT family whose data it joins (``error_feedback``, ``symbolic``, ``semantic``), ``""`` for none (held
    out, as the paper holds tier 3 and domain transfer out); ``None``: its shift decides (``training.dataset``)."""

    model_fault: ClassVar[bool] = False
    """True for faults of the agent's own model (sandbox.perturbations.model): the LLM proxy injects them, at the
    turn their onset says, so they are never drawn by tier and no :class:`Onset` wraps them."""
    drawn: ClassVar[bool] = True
    """False for a perturbation built from a user's data (a release diff): asked for by name, never drawn by tier."""

    drifts: ClassVar[bool | None] = None
    """Whether it may start mid-episode (an ``after`` onset); ``None``: its kind decides (:meth:`can_drift`)."""

    severity: int = 1
    pool: Pool = "eval"
    seed: int = 0
    after: int = 0
    """The onset: the turns the agent plays in the world as it was before this perturbation starts (0: before the
    first turn). The agent sees the changed tool list on the next turn, with a notice (sandbox.perturbations.drift)."""

    @classmethod
    def severity_floor(cls) -> int:
        """The mildest severity worth drawing: severity 0, where a class allows it, is the identity."""
        return max(cls.min_severity, 1) if cls.max_severity >= 1 else cls.min_severity

    @classmethod
    def severities(cls) -> range:
        """Every severity worth drawing, mildest first (the one rule for strategies, measurement, PAFT, proxy)."""
        return range(cls.severity_floor(), cls.max_severity + 1)

    @classmethod
    def can_drift(cls) -> bool:
        """Whether an onset after the first turn is allowed: for perturbations of the tool surface and of
        interaction (tiers 1 and 2, but those of the query), and those that say so (a tool withdrawn for good)."""
        if cls.drifts is not None:
            return cls.drifts
        return cls.tier in ("perception", "interaction") and cls.shift in ("action", "observation")

    @model_validator(mode="after")
    def _check_severity(self) -> Perturbation:
        if not self.min_severity <= self.severity <= self.max_severity:
            raise ValueError(
                f"{self.name}: severity must be in [{self.min_severity}, {self.max_severity}], got {self.severity}"
            )
        if self.after < 0:
            raise ValueError(f"{self.name}: after (the onset turn) must be 0 or more, got {self.after}")
        if self.after and not self.can_drift():
            raise ValueError(
                f"{self.name}: after={self.after}, but a {self.shift} perturbation of tier {self.tier} cannot start "
                "mid-episode; only those of the tool surface and of interaction drift: use after=0"
            )
        return self

    needs_calls: ClassVar[bool] = False
    """True for perturbations that act on tool calls, so change nothing for a task without any."""

    def applies_to(self, task: Task) -> bool:
        """Whether this perturbation changes anything for ``task`` (a booking-code shift needs a booking)."""
        return bool(task.plan) or not self.needs_calls

    def why_not(self, task: Task) -> str:
        """Why it does not apply to ``task`` (where ``applies_to`` says no), in a few words for ``check-domain``."""
        if self.needs_calls and not task.plan:
            return "the task makes no tool call"
        return self.limits or "it would change nothing in this task"

    wrapper: ClassVar[WrapperClass | None] = None
    """The wrapper class ``apply`` puts around the env, as ``wrapper(env, spec)``."""

    def apply(self, env: Env) -> Env:
        """Wrap ``env``; severity 0 is the identity. Override for more than one wrapper."""
        if self.wrapper is None:
            raise NotImplementedError(f"{type(self).__name__} must set 'wrapper' or override apply()")
        return env if self.severity == 0 else self.wrapper(env, self)

    def extra_turns(self) -> int:
        """Turns a perfect agent needs beyond the clean plan (retries, waits, token steps)."""
        return 0

    def label(self) -> str:
        params = self.model_dump(exclude={"severity", "pool", "seed", "after"})
        extra = "".join(f",{k}={v}" for k, v in params.items())
        onset = f",after={self.after}" if self.after else ""
        return f"{self.name}(s={self.severity},{self.pool}{extra}{onset})"

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON data; an onset of 0 is left out, so a static spec keeps the key it always had."""
        return {"name": self.name, **self.model_dump(exclude=None if self.after else {"after"})}

    def static(self) -> Perturbation:
        """The same perturbation from before the first turn (``after=0``): a drift case's static twin."""
        return self.model_copy(update={"after": 0}) if self.after else self

    def __repr__(self) -> str:
        return self.label()


def apply_stack(env: Env, perturbations: Sequence[Perturbation]) -> Env:
    """Wrap ``env`` in each perturbation by its ``layer``'s place in :data:`LAYERS`, lowest first (the
    order is stable within a layer).

    Layers make any stack well defined: the domain is swapped first, tools are removed or
    restructured next, then feedback changes, then surface names and descriptions, then the
    query's wording, so a rename always sees (and renames) every tool the layers below added.

    A perturbation with an onset (``after``) wraps the env as every other does, inside an
    :class:`~sandbox.perturbations.drift.Onset` that serves the env below it until the onset's turn.
    """
    from sandbox.perturbations.drift import Onset

    for p in sorted(perturbations, key=lambda p: layer_index(p.layer)):
        changed, after = p.apply(env), getattr(p, "after", 0)
        env = Onset(env, changed, after) if after and changed is not env and not p.model_fault else changed
    return env
