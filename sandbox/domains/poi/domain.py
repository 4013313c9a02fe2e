"""The POI domain (the training domain), built from its tools, world and task families."""

from sandbox.define import define_domain
from sandbox.domains.poi import families, tools, vocabulary, world

DOMAIN = define_domain(
    "poi", tools.TOOLS, world=world.build_world, families=families.FAMILIES, vocabulary=vocabulary.VOCABULARY
)
