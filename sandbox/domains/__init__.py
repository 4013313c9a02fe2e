"""The built-in domains: ``poi`` (training) and ``medical`` (held out); ``bfcl`` (BFCL multi-turn)
when the ``bfcl-eval`` wheel is installed, loaded only when asked for."""

from __future__ import annotations

import importlib

from sandbox.domain import Domain
from sandbox.domains.medical import families as medical_families
from sandbox.domains.medical import tools as medical_tools
from sandbox.domains.medical import world as medical_world
from sandbox.domains.poi import families as poi_families
from sandbox.domains.poi import tools as poi_tools
from sandbox.domains.poi import world as poi_world
from sandbox.errors import UnknownName

DOMAINS: dict[str, Domain] = {
    "poi": Domain("poi", poi_world.build_world, poi_tools.TOOLS, poi_families.FAMILIES),
    "medical": Domain("medical", medical_world.build_world, medical_tools.TOOLS, medical_families.FAMILIES),
}


LAZY: dict[str, str] = {"bfcl": "sandbox.domains.bfcl:load"}
"""Domains built on first request, as ``module:function`` (an entry point's form): their data and
packages load only then, and, as with a user's domain registered by entry point, ``sandbox.domains``
does not import them."""


def get_domain(name: str) -> Domain:
    if name in LAZY and name not in DOMAINS:
        module, _, function = LAZY[name].partition(":")
        DOMAINS[name] = getattr(importlib.import_module(module), function)()
    try:
        return DOMAINS[name]
    except KeyError:
        raise UnknownName("domain", name, [*DOMAINS, *(n for n in LAZY if n not in DOMAINS)]) from None
