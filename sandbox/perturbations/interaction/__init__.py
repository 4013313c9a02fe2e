"""Tier 2, Interaction: what tools answer changes; an agent that reads feedback recovers.

Four kinds, one module each: ``observations`` (what an answer holds), ``failures`` (calls that fail or move),
``behaviour`` (a tool that behaves differently) and ``deception`` (an answer that lies plausibly). Importing the
package registers them, in the catalogue's order.
"""

# The import order is the registration order, which is the catalogue's.
# isort: off
from sandbox.perturbations.interaction.observations import FormatShift, MissingValues
from sandbox.perturbations.interaction.failures import RateLimit, RuntimeFailure, ToolRedirection, VerificationCodeShift
from sandbox.perturbations.interaction.behaviour import BehaviourChange
from sandbox.perturbations.interaction.deception import DeceptiveResult

# isort: on

__all__ = ["BehaviourChange", "DeceptiveResult", "FormatShift", "MissingValues", "RateLimit", "RuntimeFailure",
           "ToolRedirection", "VerificationCodeShift"]  # fmt: skip
