"""The medical domain (held out, for ΔD), built from its tools, world and task families."""

from sandbox.define import define_domain
from sandbox.domains.medical import families, tools, vocabulary, world

DOMAIN = define_domain(
    "medical", tools.TOOLS, world=world.build_world, families=families.FAMILIES, vocabulary=vocabulary.VOCABULARY
)
