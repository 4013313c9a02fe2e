"""The oracle on stacks of two perturbations that meet in what it reads: each pair over its severities and seeds,
on every sampled task of the worlds both change."""

from __future__ import annotations

import itertools

import pytest

from sandbox import OracleAgent
from sandbox.audits.strength import sample_tasks
from sandbox.case import Case, run_cases
from sandbox.perturbations import get

PAIRS = [
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
]


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_the_oracle_is_right_on_every_seed_of_a_stack_of_two(pair) -> None:
    first, second = map(get, pair)
    stacks = [
        (first(severity=a, seed=seed_a), second(severity=b, seed=seed_b))
        for a, b, seed_a, seed_b in itertools.product(
            range(first.min_severity, first.max_severity + 1),
            range(second.min_severity, second.max_severity + 1),
            range(4),
            range(4),
        )
    ]
    tasks = [t for t in sample_tasks(per_family=1) if t.domain in ("poi", "medical")]
    cases = [Case(t, specs) for t in tasks for specs in stacks if all(p.applies_to(t) for p in specs)]
    assert len(cases) > 100
    wrong = [
        episode.explain()
        for case, episode in zip(cases, run_cases(OracleAgent(), cases), strict=True)
        if not (episode.success and episode.outcome == ("success" if case.solvable else "refused"))
    ]
    assert not wrong, f"{len(wrong)} of {len(cases)} wrong; the first:\n{wrong[0]}"
