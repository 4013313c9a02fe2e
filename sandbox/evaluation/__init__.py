"""The evaluation core: fixed samples of cases, the episode cache, the batched runner, reports and gates.

It imports neither pytest nor Hypothesis, so ``openagent eval``, the demo and a user's script use
it without the plugin; the plugin builds on it.
"""

from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EpisodeCache
from sandbox.evaluation.draw import draw_cases
from sandbox.evaluation.evaluate import evaluate
from sandbox.evaluation.gate import GateError, GateResult, check, compare, parse_gate
from sandbox.evaluation.report import Record, Report, Row
from sandbox.evaluation.runner import AgentFailure, Runner, WorldFailed, run_in_batches
from sandbox.evaluation.specs import AgentSpecError, check_spec, load_agent

__all__ = [
    "DEFAULT_CACHE_DIR", "AgentFailure", "AgentSpecError", "EpisodeCache", "GateError", "GateResult", "Record",
    "Report", "Row", "Runner", "WorldFailed", "check", "check_spec", "compare", "draw_cases", "evaluate",
    "load_agent", "parse_gate", "run_in_batches",
]  # fmt: skip
