"""The oracle: a privileged expert that knows the gold plan but acts only through the tools.

It is a reference agent (:class:`~sandbox.agent.Reference`): the runner briefs it on each
episode's task (privileged: the gold calls in canonical names and the answer fields they feed),
and it reads everything else from what any agent sees: the tool specs (it finds each tool by
what its description says, never by its name), the query, and the observations. Beyond the
briefed task it is stateless: each turn it rebuilds where it is from the messages, matching
results to steps by the ``tool_call_id`` it gave each call (``<step>.<attempt>``).

It is the proof that a perturbation keeps a task solvable: it solves every solvable perturbed
case, and refuses when the tools say the task cannot be done (a capability no description
offers, an entity that is not found, a permanent failure).
"""

from sandbox.agents.oracle.agent import OracleAgent
from sandbox.agents.oracle.observations import View, decode, is_error, lookup, normalize, partial
from sandbox.agents.oracle.planner import Planner
from sandbox.agents.oracle.steps import refuse
from sandbox.agents.oracle.tools import capability, names_pattern

__all__ = [
    "OracleAgent", "Planner", "View", "capability", "decode", "is_error", "lookup", "names_pattern", "normalize",
    "partial", "refuse",
]  # fmt: skip
