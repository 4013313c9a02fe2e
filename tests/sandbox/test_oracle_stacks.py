"""The oracle on stacks of perturbations that meet in what it reads: each stack over its severities and seeds, on
every sampled task of the worlds they all change."""

from __future__ import annotations

import itertools

import pytest

from sandbox import OracleAgent
from sandbox.audits.strength import sample_tasks
from sandbox.case import Case, run_cases
from sandbox.perturbations import get

STACKS = [
    # an inverted tool that moved: its successor says only "successor of X; same arguments", so X's description
    # tells that it runs first, and which lookup the request it returns goes to
    ("logic_inversion", "tool_redirection"),
    # a merged tool takes the lookup's arguments for an id: a lookup whose answer lacks fields (the id among
    # them) is asked again before the id is judged one it returns
    ("dependency_merge", "missing_values"),
    # one of a split tool's parts moved: its successor's description reads like every other successor's, so the
    # part that takes the call's value is looked for among the tools documented like the one it succeeds
    ("tool_split", "tool_redirection"),
    # a split tool's arguments restructured: the weekday is inside a joined slot, so no enum tells the parts
    # apart; the part called refuses the day, naming the part that serves it
    ("tool_split", "argument_restructuring"),
    # a release adds a required parameter of one value to every tool, the wait tool a rate limit names included
    ("rate_limit", "param_added"),
    # a split, inverted tool whose parts both moved: the part that takes the day is read through the one it succeeds
    ("logic_inversion", "tool_split", "tool_redirection"),
    # the part an error names moved too: its successor takes the call
    ("tool_split", "argument_restructuring", "tool_redirection"),
]


@pytest.mark.parametrize("stack", STACKS, ids="+".join)
def test_the_oracle_is_right_on_every_seed_of_a_stack(stack) -> None:
    kinds = [get(name) for name in stack]
    seeds = 4 if len(stack) == 2 else 2  # a stack of three: as many stacks as a pair has, about
    options = [
        [(k, sev, seed) for sev in range(k.min_severity, k.max_severity + 1) for seed in range(seeds)] for k in kinds
    ]
    stacks = [tuple(k(severity=sev, seed=seed) for k, sev, seed in drawn) for drawn in itertools.product(*options)]
    tasks = [t for t in sample_tasks(per_family=1) if t.domain in ("poi", "medical")]
    cases = [Case(t, specs) for t in tasks for specs in stacks if all(p.applies_to(t) for p in specs)]
    assert len(cases) > 100
    wrong = [
        episode.explain()
        for case, episode in zip(cases, run_cases(OracleAgent(), cases), strict=True)
        if not (episode.success and episode.outcome == ("success" if case.solvable else "refused"))
    ]
    assert not wrong, f"{len(wrong)} of {len(cases)} wrong; the first:\n{wrong[0]}"
