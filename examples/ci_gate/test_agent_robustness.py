"""Robustness tests for the agent we ship: one property per tier, the rates left to the gate.

Each test draws perturbed cases of its tier (Hypothesis shrinks a failure to the smallest
perturbation that causes it). A test fails only on what must never happen; how often the agent
may fail is the gate's business (``[tool.openagent] gate`` in pyproject.toml), because a model
that is right 90% of the time is still wrong on some case.
"""

import pytest_openagent as openagent

EXAMPLES = 8


@openagent.perturb(tier="perception", max_examples=EXAMPLES)
def test_reads_tools_and_requests_by_meaning(agent, case):
    episode = case.run(agent)
    assert episode.outcome != "agent_error", episode.explain()


@openagent.perturb(tier="interaction", max_examples=EXAMPLES)
def test_uses_what_the_tools_answer(agent, case):
    episode = case.run(agent)
    assert episode.outcome != "agent_error", episode.explain()


@openagent.perturb(tier="reasoning", max_examples=EXAMPLES)
def test_follows_the_documented_call_order(agent, case):
    episode = case.run(agent)
    assert episode.outcome != "agent_error", episode.explain()


@openagent.perturb(tier="internalization", max_examples=EXAMPLES)
def test_knows_its_limits(agent, case):
    episode = case.run(agent)
    assert episode.outcome != "agent_error", episode.explain()
