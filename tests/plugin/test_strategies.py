"""Strategies: exports, validation, and shrinking toward the simplest case."""

import random
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import pytest_openagent as openagent
from pytest_openagent import strategies
from sandbox.evaluation.draw import task_pool
from sandbox.perturbations import Perturbation, registry
from tests import toys

pytestmark = pytest.mark.usefixtures("toy_perturbations")
TOYS = ["toy_shout", "toy_pad"]
FIND = settings(database=None, max_examples=300, suppress_health_check=list(HealthCheck))


def test_the_public_faces_are_explicit():
    assert sorted(strategies.__all__) == ["cases", "perturbations", "stacks", "tasks"]
    for name in strategies.__all__:
        assert callable(getattr(strategies, name))
    for name in openagent.__all__:
        assert hasattr(openagent, name), name
    assert {"perturb", "evaluate", "Report", "strategies", "load_agent"} <= set(openagent.__all__)


def test_tasks_shrink_toward_fewer_calls():
    task = find(strategies.tasks(), lambda t: True, settings=FIND)
    assert task.n_calls == 1 and task.solvable
    assert find(strategies.tasks(solvable=False), lambda t: True, settings=FIND).n_calls == 0
    assert find(strategies.tasks(), lambda t: t.n_calls >= 2, settings=FIND).n_calls == 2


def test_a_case_shrinks_to_one_mild_low_tier_perturbation_on_a_short_task():
    found = find(
        strategies.cases(names=TOYS, max_stack=2),
        lambda c: c.task.n_calls >= 1 and any(p.severity >= 2 for p in c.perturbations if p.name == "toy_shout"),
        settings=FIND,
    )
    assert [(p.name, p.severity, p.seed) for p in found.perturbations] == [("toy_shout", 2, 0)]
    assert found.task.n_calls == 1


def test_perturbations_shrink_toward_the_lowest_tier_and_severity():
    assert find(strategies.perturbations(names=TOYS), lambda p: True, settings=FIND).name == "toy_shout"
    assert find(strategies.perturbations(tier=2, names=TOYS[1:]), lambda p: True, settings=FIND).name == "toy_pad"
    assert find(strategies.perturbations(names="toy_shout"), lambda p: True, settings=FIND).severity == 1


def test_stacks_shrink_toward_fewer_perturbations():
    stack = find(strategies.stacks(max_size=2, names=TOYS), lambda s: True, settings=FIND)
    assert len(stack) == 1
    assert len(find(strategies.stacks(max_size=2, names=TOYS), lambda s: len(s) == 2, settings=FIND)) == 2


@settings(max_examples=30, deadline=None, database=None)
@given(strategies.cases(tier=[1, 2], max_stack=2))
def test_cases_hold_distinct_perturbations_that_apply_to_their_task(case):
    names = [p.name for p in case.perturbations]
    assert 1 <= len(names) <= 2 and len(set(names)) == len(names)
    assert all(p.applies_to(case.task) for p in case.perturbations)
    assert all(p.severity >= 1 for p in case.perturbations)  # severity 0 is the identity: never drawn
    assert repr(case) == f"Case({case.describe()})"


@settings(max_examples=10, deadline=None, database=None)
@given(st.data())
def test_strategies_compose_with_a_users_task_strategy(data):
    one_call = strategies.tasks(max_calls=1, solvable=True)
    case = data.draw(strategies.cases(names="toy_pad", tasks=one_call))
    assert case.task.n_calls == 1 and case.perturbations[0].name == "toy_pad"


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="Unknown tier 5"):
        strategies.perturbations(tier=5)
    with pytest.raises(ValueError, match="is in tier 'interaction', not"):
        strategies.cases(tier="perception", names=["toy_pad"])
    with pytest.raises(ValueError, match=r"Unknown domain 'poj'\. Did you mean 'poi'"):
        strategies.tasks("poj")
    with pytest.raises(ValueError, match="Unknown pool 'test'"):
        strategies.cases(pool="test")
    with pytest.raises(ValueError, match="max_stack must be at least 1"):
        strategies.cases(max_stack=0)


@pytest.mark.parametrize("k", range(4))
def test_a_failure_that_needs_one_perturbation_of_a_stack_shrinks_to_it_alone(k):
    """Issue #45: an interaction failure shrank to a stack of 3 where ``rate_limit`` alone fails. Each perturbation
    is drawn whole, so deleting one keeps the settings of the others (here: the rate limit's seed)."""
    import random

    from hypothesis import HealthCheck, find, settings

    from pytest_openagent.strategies import stacks

    def fails(stack):
        return any(p.name == "rate_limit" and p.seed % 5 == k for p in stack)

    found = find(
        stacks(max_size=3, tier="interaction"), fails, random=random.Random(k),
        settings=settings(max_examples=2000, database=None, suppress_health_check=list(HealthCheck)),
    )  # fmt: skip
    assert [p.name for p in found] == ["rate_limit"]


class Picky(Perturbation):
    """Changes one task in four, scattered over the pool, and which ones depends on its seed (as a deceptive
    result's seed picks the other requests whose answers it tells)."""

    name = "toy_picky"
    tier = "interaction"
    shift = "observation"
    max_severity = 3

    def applies_to(self, task):
        return _picks(task, self.seed)

    def apply(self, env):
        return toys._Pad(env)


def _picks(task, seed: int) -> bool:
    return zlib.crc32(f"{task.id}/{seed}".encode()) % 4 == 0


@pytest.fixture
def toy_picky() -> Iterator[None]:
    registry.register(Picky)
    try:
        yield
    finally:
        registry._REGISTRY.pop("toy_picky", None)


@pytest.mark.parametrize("min_stack", [1, 0])
@pytest.mark.parametrize("k", range(3))
def test_a_case_shrinks_past_the_tasks_its_perturbations_leave_alone(toy_picky, min_stack, k):
    """Issue #45: a deceptive case shrank to severity 1 on the shortest task from some starts only, so the test files
    a run had imported decided the result (Hypothesis mixes constants from the loaded modules' code into its draws,
    derandomized too). Tasks that the perturbation leaves alone at seed 0 but changes at another seed lay among the
    others: the shrinker stopped wherever its start left it. Only tasks the mildest instance changes are drawn now,
    so every start (each stream k) shrinks to the first of them, at seed 0."""
    found = find(strategies.cases(names="toy_picky", min_stack=min_stack), lambda c: bool(c.perturbations),
                 settings=FIND, random=random.Random(k))  # fmt: skip
    first = next(t for t in task_pool(("poi",), "test") if _picks(t, 0))
    assert (found.task.id, [(p.severity, p.seed) for p in found.perturbations]) == (first.id, [(1, 0)])


def test_perturbations_that_change_no_task_of_the_domain_are_refused(toy_picky):
    with pytest.raises(ValueError, match=r"none of toy_picky changes a test task of 'poi' \(1 tasks\)"):
        strategies.cases(names="toy_picky", tasks=[next(t for t in task_pool(("poi",), "test") if not _picks(t, 0))])
