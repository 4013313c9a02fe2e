"""Open-world shifts as composable environment wrappers, by tier (see ``catalogue``)."""

from sandbox.perturbations.base import POOLS, TIERS, Perturbation, Pool, Shift, Tier, tier_number
from sandbox.perturbations.registry import create, from_dict, get, names, normalize_tiers, register

__all__ = [
    "POOLS", "TIERS", "Perturbation", "Pool", "Shift", "Tier", "create", "from_dict", "get", "names",
    "normalize_tiers", "register", "tier_number",
]  # fmt: skip
