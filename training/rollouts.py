"""What an RL step plays: the run's cases, each step's share of them, and the sampled episodes of each.

A run draws its cases once: ``tasks`` train tasks, a share ``perturbed`` of them with one train-pool
perturbation. Each step takes the next ``tasks_per_step`` cases (each epoch visits every case once, so
epochs' rewards compare like with like) and runs ``group`` sampled episodes of each through the batched
:class:`~training.inference.model_agent.HFAgent` (multi-turn, real tool calls, all episodes of the step
in one batch: a group is one task's episodes, so this is not a plain batching of cases).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sandbox.seeds import child_seed
from training.config import RLConfig

if TYPE_CHECKING:
    from sandbox.case import Case
    from sandbox.episode import Episode


def run_cases(cfg: RLConfig, perturbations: list[str]) -> list[Case]:
    """The run's cases: ``cfg.tasks`` train tasks, a share ``cfg.perturbed`` of them with one train-pool
    perturbation each, drawn once by ``cfg.seed``."""
    from sandbox import tasks
    from sandbox.case import Case

    pool = tasks(cfg.domain, "train", cfg.tasks, cfg.seed)
    if cfg.perturbed <= 0:
        return [Case(t) for t in pool]
    from training.dataset import paft_cases

    return paft_cases(pool, cfg.perturbed, perturbations, child_seed(cfg.seed, "rl-perturb"))


def step_indices(cfg: RLConfig, n_cases: int, step: int) -> list[int]:
    """The indices of the step's cases among the run's ``n_cases``. Each epoch visits every case once, in an order
    drawn by ``(seed, epoch)``, so one epoch's reward against the next compares the same cases, and a resumed run
    sees the same ones."""
    per = min(cfg.tasks_per_step, n_cases)
    orders: dict[int, list[int]] = {}
    picked = []
    for position in range(step * per, (step + 1) * per):
        epoch, i = divmod(position, n_cases)
        if epoch not in orders:
            orders[epoch] = list(range(n_cases))
            random.Random(child_seed(cfg.seed, "rl", epoch)).shuffle(orders[epoch])
        picked.append(orders[epoch][i])
    return picked


def epoch_of(cfg: RLConfig, n_cases: int, step: int) -> int:
    """The epoch (0-based) that step ``step`` (0-based) starts in."""
    return step * min(cfg.tasks_per_step, n_cases) // n_cases


def rollout(
    model: Any, tokenizer: Any, cases: Sequence[Case], cfg: RLConfig, step: int
) -> tuple[list[Episode], dict[str, Any]]:
    """``group`` sampled episodes of each case, all in one lockstep batch; the agent's stats."""
    from sandbox.episode import run_episodes
    from training.generating import generating
    from training.inference.model_agent import HFAgent

    envs = [case.env() for case in cases for _ in range(cfg.group)]
    max_steps = min(cfg.max_turns, max(case.max_steps for case in cases))
    with generating(model) as generator_model:
        agent = HFAgent(
            model=generator_model, tokenizer=tokenizer, max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature, top_k=cfg.top_k, seed=child_seed(cfg.seed, "rollout", step), name="rl-policy",
        )  # fmt: skip
        episodes = run_episodes(agent, envs, max_steps)
    return episodes, dict(agent.stats)
