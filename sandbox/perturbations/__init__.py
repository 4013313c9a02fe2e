"""Open-world shifts as composable environment wrappers, by tier (see ``catalogue``).

Importing this package registers the built-in catalogue: one module per tier.
"""

from sandbox.perturbations import (
    evolution,  # after the tiers it draws on: the catalogue lists it last in each tier
    interaction,
    internalization,
    model,
    perception,
    reasoning,
)
from sandbox.perturbations.base import (
    LAYERS,
    POOLS,
    TIERS,
    Layer,
    Perturbation,
    Pool,
    Shift,
    Tier,
    apply_stack,
    step_budget,
    tier_number,
)
from sandbox.perturbations.registry import create, from_dict, get, names, normalize_tiers, register

del evolution, interaction, internalization, model, perception, reasoning

__all__ = [
    "LAYERS", "POOLS", "TIERS", "Layer", "Perturbation", "Pool", "Shift", "Tier", "apply_stack", "create",
    "from_dict", "get", "names", "normalize_tiers", "register", "step_budget", "tier_number",
]  # fmt: skip
