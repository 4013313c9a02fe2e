"""Step budgets: how many turns an episode may take, derived from its task's gold plan and its perturbations.

One rule for every way in (``Case.run``, ``openagent eval``, ``run_episodes`` over envs from ``make_env``): a
clean episode gets a turn for each call of its longest user turn, one to answer and :data:`STEPS_TO_SPARE`
to spare (never under :data:`DEFAULT_MAX_STEPS`); each perturbation adds the turns it costs a perfect agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sandbox.task import Task

if TYPE_CHECKING:
    from sandbox.env import Env

DEFAULT_MAX_STEPS = 8
"""The fewest turns any episode gets."""
STEPS_TO_SPARE = 2
"""Turns a clean episode's step limit leaves beyond one a call and one to answer (see :func:`plan_steps`)."""

_TURN_CALL = re.compile(r"t(\d+)\.\d+")
"""The id of a gold call of a task of several user turns, ``t<turn>.<n>`` (``bfcl``'s)."""


def user_turns(task: Task) -> list[int] | None:
    """The user turn of each gold call of a task played over several user turns (every call id
    ``t<turn>.<n>``, as ``bfcl``'s); ``None`` for a task of one request."""
    found = [_TURN_CALL.fullmatch(c.id) for c in task.plan]
    if not found or not all(found):
        return None
    return [int(m.group(1)) for m in found if m is not None]


def plan_steps(task: Task) -> int:
    """The step limit of a clean episode of ``task``: a turn for each call of its longest user turn (the whole plan
    for a task of one), one to answer and :data:`STEPS_TO_SPARE` to spare; never under ``DEFAULT_MAX_STEPS``."""
    turns = user_turns(task)
    longest = max((turns.count(t) for t in set(turns)), default=0) if turns is not None else len(task.plan)
    return max(DEFAULT_MAX_STEPS, longest + 1 + STEPS_TO_SPARE)


def step_budget(perturbations: Iterable[Any], base: int) -> int:
    """The step limit for a stack: the clean limit plus the turns its perturbations cost."""
    return base + sum(p.extra_turns() for p in perturbations)


def env_steps(env: Env) -> int:
    """The step limit of an episode of ``env`` (a task's env, perhaps wrapped by perturbations): as ``Case.max_steps``
    gives it for the same task and stack."""
    specs = {id(s): s for w in env.wrappers() if callable(getattr(s := getattr(w, "spec", None), "extra_turns", None))}
    return step_budget(specs.values(), plan_steps(env.task))
