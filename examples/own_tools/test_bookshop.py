"""Robustness tests of an agent on our own bookshop tools (``bookshop.py``), one per tier.

Run: ``pytest --openagent-agent oracle`` here (or your agent's spec). Hypothesis draws perturbed
cases of the bookshop; a failure shrinks to the smallest perturbation that causes it.
"""

import pytest_openagent as openagent

DOMAIN = "bookshop:SHOP"


@openagent.perturb(tier="perception", domain=DOMAIN, max_examples=10)
def test_finds_tools_by_what_they_do(agent, case):
    episode = case.run(agent)
    assert episode.outcome != "agent_error", episode.explain()  # the rate is the gate's business


@openagent.perturb(tier="interaction", domain=DOMAIN, max_examples=10)
def test_recovers_from_what_the_tools_answer(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()


@openagent.perturb(tier="reasoning", domain=DOMAIN, max_examples=10, relation="invariant")
def test_what_it_solves_clean_it_solves_restructured(agent, case):
    pass  # relation="invariant" asserts it: solved clean implies solved perturbed


@openagent.perturb(tier="internalization", domain=DOMAIN, max_examples=10)
def test_refuses_what_the_tools_cannot_do(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
