"""Tier 1, Perception: the request and the tools look different; what they mean does not.

Two kinds, one module each: ``query`` (the request's wording) and ``tools`` (the tool set as the agent is told
about it). Importing the package registers both, the query shifts first (the catalogue's order).
"""

from sandbox.perturbations.perception.query import QueryNoise, QueryParaphrase, RedundantQuery, UnderspecifiedQuery
from sandbox.perturbations.perception.tools import (
    DescriptionRewrite,
    DistractorTools,
    IdentityErasure,
    SchemaNoise,
    SemanticRenaming,
    SemanticTrap,
    ToolNameNoise,
)

__all__ = [
    "DescriptionRewrite", "DistractorTools", "IdentityErasure", "QueryNoise", "QueryParaphrase", "RedundantQuery",
    "SchemaNoise", "SemanticRenaming", "SemanticTrap", "ToolNameNoise", "UnderspecifiedQuery",
]  # fmt: skip
