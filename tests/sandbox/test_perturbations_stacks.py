"""Property: any stack of up to 3 compatible perturbations applies, and the oracle still gets it right."""

from __future__ import annotations

from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import OracleAgent
from sandbox.audits.strength import sample_tasks
from sandbox.case import Case
from sandbox.perturbations import POOLS, get, names
from sandbox.perturbations.internalization import held_out_twin

ORACLE = OracleAgent()


@cache
def sample():
    return tuple(sample_tasks(per_family=1))


@st.composite
def stacks(draw):
    task = draw(st.sampled_from(sample()))
    chosen = draw(st.lists(st.sampled_from(names()), min_size=1, max_size=3, unique=True))
    specs = []
    for name in chosen:
        cls = get(name)
        severity = draw(st.integers(cls.min_severity, cls.max_severity))
        specs.append(cls(severity=severity, pool=draw(st.sampled_from(POOLS)), seed=draw(st.integers(0, 3))))
    return task, tuple(specs)


def compatible(task, specs) -> bool:
    """Each spec changes something for the task it will meet (the medical twin after a domain transfer)."""
    transfer = next((p for p in specs if p.name == "domain_transfer"), None)
    if transfer is not None and transfer.applies_to(task):
        task = held_out_twin(task, transfer.seed)
    return all(p.applies_to(task) for p in specs if p is not transfer)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(stacks())
def test_any_compatible_stack_applies_and_the_oracle_succeeds(drawn) -> None:
    task, specs = drawn
    if not compatible(task, specs):
        return
    case = Case(task, specs)
    env = case.env()
    assert env.tool_specs() and isinstance(env.query(), str)
    episode = case.run(ORACLE)
    assert episode.success, episode.explain()
    assert episode.outcome == ("success" if env.solvable else "refused")
