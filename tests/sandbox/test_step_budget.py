"""The step budget: each case's own, from its plan's length and what its perturbations add, or one the user sets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

import sandbox
from pytest_openagent.cli import main
from sandbox import Call, StaticAgent, UserTask
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.evaluation.evaluate import evaluate
from sandbox.perturbations import get

ITEMS = [f"i{n}" for n in range(18)]


@dataclass
class Cart:
    seed: int
    items: list[str] = field(default_factory=list)


@sandbox.tool(role="write")
def add_item(cart: Cart, item: str) -> dict:
    """Put an item in the cart.

    Args:
        item: the item's code, e.g. i1
    """
    cart.items.append(item)
    return {"added": item, "in_cart": len(cart.items)}


PLAN = [Call(id=f"a{n}", tool="add_item", args={"item": item}, after=(f"a{n - 1}",) if n else ())
        for n, item in enumerate(ITEMS)]  # fmt: skip
CART = sandbox.define_domain(
    "budget-cart", tools=[add_item], state=lambda seed: Cart(seed),
    tasks=[UserTask(f"Put {', '.join(ITEMS)} in my cart, in that order.", id="long", plan=PLAN),
           UserTask("Put i1 in my cart.", id="short", plan=[Call(id="a", tool="add_item", args={"item": "i1"})])],
)  # fmt: skip


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    sandbox.register_domain(CART, replace=True)
    yield
    DOMAINS.pop(CART.name, None)


def test_a_long_plan_gets_a_turn_per_call_and_a_perturbation_its_extra_turns() -> None:
    long, short = CART.tasks()
    assert Case(short).max_steps == 8  # never under the clean limit our worlds use
    assert Case(long).max_steps == len(ITEMS) + 3  # a call a turn, the answer, two to spare
    assert Case(long, (get("runtime_error")(severity=3),)).max_steps == len(ITEMS) + 3 + 3
    episode = Case(long).run(StaticAgent())  # one call a turn, as the clean plan goes
    assert episode.outcome == "success", episode.explain()
    assert len(episode.steps) == len(ITEMS) + 1


def test_the_user_sets_every_episodes_budget_and_the_report_says_so() -> None:
    report = evaluate("oracle", "interaction", n=4, domain=CART, cache_dir=None, max_steps=1)
    assert report.meta["max_steps"] == 1
    assert {r.clean_outcome for r in report.records} == {"step_limit"}
    assert evaluate("oracle", "interaction", n=4, domain=CART, cache_dir=None).meta["max_steps"] is None
    with pytest.raises(sandbox.errors.UsageError, match="max_steps=0"):
        evaluate("oracle", n=1, domain=CART, cache_dir=None, max_steps=0)
    [episode] = run_cases(StaticAgent(), [Case(CART.tasks()[1])], 1)
    assert episode.outcome == "step_limit"


def test_openagent_eval_takes_max_steps(tmp_path, capsys) -> None:
    argv = ["eval", "--agent", "oracle", "--domain", f"{__name__}:CART", "--tiers", "2", "--n", "2", "--no-cache"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--max-steps", "0"])
    assert exit_info.value.code == 2 and "--max-steps: must be at least 1, got 0" in capsys.readouterr().err
    out = tmp_path / "report.json"
    assert main([*argv, "--max-steps", "1", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["meta"]["max_steps"] == 1


def test_run_episodes_over_make_env_gives_each_env_the_budget_its_plan_and_stack_call_for() -> None:
    """Issue #45: ``run_episodes`` over ``make_env`` envs gave every episode a flat 8 turns, so a long plan ran out."""
    from sandbox import make_env, run_episodes
    from sandbox.budget import env_steps
    from sandbox.perturbations.base import apply_stack

    long, short = CART.tasks()
    stack = (get("runtime_error")(severity=3),)
    envs = [make_env(CART, long), make_env(CART, short), apply_stack(make_env(CART, long), stack)]
    assert [env_steps(e) for e in envs] == [Case(long).max_steps, Case(short).max_steps, Case(long, stack).max_steps]
    episodes = run_episodes(StaticAgent(), envs[:2])
    assert [e.outcome for e in episodes] == ["success", "success"], episodes[0].explain()
    assert run_episodes(StaticAgent(), envs[:1], max_steps=8)[0].outcome == "step_limit"  # a budget given still wins
