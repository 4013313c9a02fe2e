"""Open-world shifts as composable environment wrappers, by tier (see ``catalogue``).

Importing this package registers the built-in catalogue: one module per tier.
"""

# The import order is the registration order, which is the catalogue's (and Hypothesis shrinks toward the first):
# evolution last, so its operators come after the paper's in each tier.
# isort: off
from sandbox.perturbations import interaction, internalization, model, perception, reasoning
from sandbox.perturbations import evolution

# isort: on
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
