"""The domain registry: the built-in domains (``poi`` for training, ``medical`` held out; ``bfcl``, BFCL
multi-turn, when the ``bfcl-eval`` wheel is installed, and ``mcp``, the MCP server that
``--openagent-mcp`` names, both loaded only when asked for) and the user's.

A registry that is a dict (:data:`DOMAINS`): :func:`register_domain` adds to it, :func:`get_domain`
reads it, and also finds a domain named ``module:attribute`` (imported on the spot, the working folder
on the path after installed packages, so a user need not package anything) or published by an installed
package under the ``openagent.domains`` entry-point group (read only when a name is not found)::

    [project.entry-points."openagent.domains"]
    library = "my_package.library:DOMAIN"

An entry point, like a ``module:attribute``, names a :class:`~sandbox.domain.Domain` or a function of
no arguments that returns one.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from sandbox.domain import Domain
from sandbox.env import Env, clean_env
from sandbox.errors import UnknownName, UsageError, WrongType
from sandbox.importing import import_attribute

if TYPE_CHECKING:
    from sandbox.task import Task

ENTRY_POINTS = "openagent.domains"
BUILT_IN: tuple[str, ...] = ("poi", "medical", "bfcl")

LAZY: dict[str, str] = {
    "poi": "sandbox.domains.poi.domain:DOMAIN", "medical": "sandbox.domains.medical.domain:DOMAIN",
    "bfcl": "sandbox.domains.bfcl:load", "mcp": "sandbox.domains.mcp:load",
}  # fmt: skip
"""Domains built on first request, as ``module:attribute`` (an entry point's form): their code, data and
packages load only then, and, as with a user's domain registered by entry point, ``sandbox.domains``
imports none of them."""
EAGER: tuple[str, ...] = ("poi", "medical")
"""The built-in worlds listed in :data:`DOMAINS` from the start (each built when first read)."""


class Registry(MutableMapping[str, Domain]):
    """The registered domains by name: a dict whose :data:`EAGER` worlds are listed from the start but
    built when first read (their modules load then), so ``import sandbox`` builds no world."""

    def __init__(self, listed: tuple[str, ...]) -> None:
        self._entries: dict[str, Domain | None] = dict.fromkeys(listed)

    def __getitem__(self, name: str) -> Domain:
        domain = self._entries[name]
        if domain is None:
            domain = self._entries[name] = _load(name, LAZY[name])
        return domain

    def __setitem__(self, name: str, domain: Domain) -> None:
        self._entries[name] = domain

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({', '.join(self._entries)})"


DOMAINS: MutableMapping[str, Domain] = Registry(EAGER)
"""Every domain registered so far, by name: ``poi`` and ``medical`` from the start (built when first read)."""


def register_domain(domain: Domain, *, replace: bool = False) -> Domain:
    """Make ``domain`` reachable by its name; returns it.

    Registering the same object again does nothing, and so does a domain of the same definition (same
    tools and tasks, e.g. its module imported again). Another domain under a taken name is an error,
    unless ``replace=True`` (never for a built-in domain).
    """
    if not isinstance(domain, Domain):
        raise WrongType(
            f"register_domain takes a sandbox.Domain (from sandbox.define_domain), got {type(domain).__name__}"
        )
    held = DOMAINS.get(domain.name)
    if held is None or held is domain:
        DOMAINS[domain.name] = domain
        return domain
    if domain.name in BUILT_IN:
        raise UsageError(f"domain name {domain.name!r} is a built-in domain's; give yours another name")
    if not (replace or _definition(held) == _definition(domain)):
        raise UsageError(
            f"a different domain named {domain.name!r} is already registered ({held!r}); give yours another "
            f"name, or pass replace=True"
        )
    DOMAINS[domain.name] = domain
    return domain


def _definition(d: Domain) -> tuple[Any, ...]:
    return (tuple(t.name for t in d.tools), tuple(t.model_dump_json() for t in d.listed),
            tuple(f.name for f in d.families))  # fmt: skip


def get_domain(name: str | Domain) -> Domain:
    """The domain registered as ``name``, or named ``module:attribute``, or published by an entry point;
    a :class:`~sandbox.domain.Domain` object is registered (see :func:`register_domain`) and returned."""
    if isinstance(name, Domain):
        return register_domain(name)
    if not isinstance(name, str):
        raise WrongType(f"a domain is a name or a sandbox.Domain, got {type(name).__name__}")
    found = DOMAINS.get(name)
    if found is not None:
        return found
    if name in LAZY:
        DOMAINS[name] = _load(name, LAZY[name])
        return DOMAINS[name]
    if ":" in name:
        return register_domain(_load(name, name))
    for entry in _entry_points():
        if entry.name == name:
            domain = _load(f"entry point {name!r} ({entry.value})", entry.value, entry.load)
            if domain.name != name:
                raise UsageError(f"entry point {name!r} ({entry.value}) gives a domain named {domain.name!r}")
            return register_domain(domain)
    raise UnknownName("domain", name, domain_names())


def domain_of(task: Task) -> Domain:
    """The registered domain ``task`` belongs to (its ``domain`` name, as :func:`get_domain` finds it)."""
    return get_domain(task.domain)


def make_env(domain: Domain | str, task: Task) -> Env:
    """The clean env of ``task`` in ``domain`` (a Domain, or a name :func:`get_domain` resolves)."""
    if isinstance(domain, str):
        domain = get_domain(domain)
    return clean_env(domain, task)


def domain_names() -> list[str]:
    """Registered domains, then those installed packages publish (not loaded)."""
    lazy = [n for n in LAZY if n not in DOMAINS]
    return [*DOMAINS, *lazy, *(e.name for e in _entry_points() if e.name not in DOMAINS and e.name not in LAZY)]


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINTS))


def _load(what: str, spec: str, load: Any = None) -> Domain:
    obj = import_attribute(spec, f"domain {what}") if load is None else load()
    if callable(obj) and not isinstance(obj, Domain):
        obj = obj()
    if not isinstance(obj, Domain):
        raise UsageError(f"domain {what} is a {type(obj).__name__}; expected a sandbox.Domain (sandbox.define_domain)")
    return obj


__all__ = ["BUILT_IN", "DOMAINS", "EAGER", "ENTRY_POINTS", "LAZY", "domain_names", "get_domain", "make_env",
           "register_domain"]  # fmt: skip
