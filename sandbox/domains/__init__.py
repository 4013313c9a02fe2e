"""The built-in domains: ``poi`` (training) and ``medical`` (held out)."""

from __future__ import annotations

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


def get_domain(name: str) -> Domain:
    try:
        return DOMAINS[name]
    except KeyError:
        raise UnknownName("domain", name, list(DOMAINS)) from None
