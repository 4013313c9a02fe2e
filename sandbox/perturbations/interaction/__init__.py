"""Tier 2, Interaction: what tools answer changes; an agent that reads feedback recovers.

Five kinds, one module each: ``observations`` (what an answer holds), ``failures`` (calls that fail or move),
``behaviour`` (a tool that behaves differently), ``deception`` (an answer that lies plausibly, its echo of the
request showing it) and ``misfiled`` (a record that lies plausibly, an earlier answer about the same entity showing
it). Importing the package registers them, in the catalogue's order.
"""

# The import order is the registration order, which is the catalogue's.
# isort: off
from sandbox.perturbations.interaction.observations import FormatShift, MissingValues
from sandbox.perturbations.interaction.failures import RateLimit, RuntimeFailure, ToolRedirection, VerificationCodeShift
from sandbox.perturbations.interaction.behaviour import BehaviourChange
from sandbox.perturbations.interaction.deception import DeceptiveResult
from sandbox.perturbations.interaction.misfiled import DeceptiveRecord

# isort: on

__all__ = ["BehaviourChange", "DeceptiveRecord", "DeceptiveResult", "FormatShift", "MissingValues", "RateLimit",
           "RuntimeFailure", "ToolRedirection", "VerificationCodeShift"]  # fmt: skip
