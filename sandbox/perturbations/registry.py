"""The registry: a dict from name to perturbation class, with "did you mean" on a typo.

Users register their own with ``@register``; other packages ship theirs through the entry point
group ``openagent.perturbations`` (each entry point names a module or a class; loading it
registers what it defines).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from sandbox.errors import UnknownName, UsageError, WrongType
from sandbox.perturbations.base import LAYERS, TIERS, Perturbation, Tier

ENTRY_POINT_GROUP = "openagent.perturbations"
P = TypeVar("P", bound=type[Perturbation])

_REGISTRY: dict[str, type[Perturbation]] = {}
_plugins_loaded = False


def register(cls: P) -> P:
    """Class decorator: make a perturbation available by its ``name``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise WrongType(f"{cls.__qualname__} needs a class variable 'name' to be registered")
    if getattr(cls, "tier", None) not in TIERS:
        raise WrongType(f"{cls.__qualname__}.tier must be one of {TIERS}, got {getattr(cls, 'tier', None)!r}")
    if getattr(cls, "layer", None) not in LAYERS:
        raise WrongType(f"{cls.__qualname__}.layer must be one of {LAYERS}, got {getattr(cls, 'layer', None)!r}")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise UsageError(f"a perturbation named {name!r} is already registered ({existing.__qualname__})")
    _REGISTRY[name] = cls
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ep.load()


def get(name: str) -> type[Perturbation]:
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownName("perturbation", name, sorted(_REGISTRY)) from None


def names(tier: Tier | int | Iterable[Tier | int] | None = None, model_faults: bool = False) -> list[str]:
    """Registered names, in tier order then registration order; ``tier`` filters. Faults of the agent's own
    model (sandbox.perturbations.model) are left out unless ``model_faults``: they reach only agents whose model
    is reached over HTTP, so they are asked for by name, never drawn by tier; so is one built from a user's data
    (``Perturbation.drawn``: a release diff)."""
    _load_plugins()
    wanted = set(TIERS) if tier is None else set(normalize_tiers(tier))
    return [n for t in TIERS if t in wanted for n, cls in _REGISTRY.items()
            if cls.tier == t and cls.drawn and (model_faults or not cls.model_fault)]  # fmt: skip


def normalize_tiers(tier: Tier | int | str | Iterable[Tier | int | str]) -> list[Tier]:
    """``"reasoning"``, ``3``, ``[1, "interaction"]`` or ``"all"`` → tier names, checked."""
    if tier == "all":
        return list(TIERS)
    items = [tier] if isinstance(tier, str | int) else list(tier)
    if not items:
        raise UsageError(f"no tier given; use a name ({', '.join(TIERS)}), a number 1-4, a list of them, or 'all'")
    out: list[Tier] = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= len(TIERS):
            out.append(TIERS[item - 1])
        elif item in TIERS:
            out.append(item)
        else:
            raise UsageError(f"Unknown tier {item!r}. Use a name ({', '.join(TIERS)}), a number 1-4, or 'all'.")
    return out


def create(name: str, **params: Any) -> Perturbation:
    return get(name)(**params)


def from_dict(data: dict[str, Any]) -> Perturbation:
    """The inverse of ``Perturbation.to_dict``."""
    data = dict(data)
    return create(data.pop("name"), **data)
