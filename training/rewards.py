"""Rewards for RL: a finished sandbox episode in, a number out.

A reward is any callable ``reward(episode) -> float`` (the :class:`Reward` protocol). Two are
built in, named for the command line:

- ``completion`` (the default): 1 for a ``success``, else 0. It pays only for finishing a task,
  so refusing an unsolvable one earns what hallucinating an answer earns: nothing. The paper says
  such a completion-seeking reward breeds boundary blindness.
- ``refusal-aware``: 1 for a ``success`` and for a ``refused`` (the right act on an unsolvable
  task), else 0.

A user's own reward is passed as a callable, or on the command line as ``module:function``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sandbox.errors import UsageError

if TYPE_CHECKING:
    from sandbox.episode import Episode


@runtime_checkable
class Reward(Protocol):
    def __call__(self, episode: Episode, /) -> float: ...


def completion(episode: Episode) -> float:
    """1 if the task was completed, else 0: refusals earn nothing, even where refusing is right."""
    return 1.0 if episode.outcome == "success" else 0.0


def refusal_aware(episode: Episode) -> float:
    """1 if the task was completed or, being unsolvable, refused; else 0."""
    return 1.0 if episode.outcome in ("success", "refused") else 0.0


REWARDS: dict[str, Reward] = {"completion": completion, "refusal-aware": refusal_aware}


def get_reward(spec: str | Callable[[Episode], float]) -> Reward:
    """A reward by name (``completion``, ``refusal-aware``), by ``module:function``, or the callable itself."""
    if callable(spec):
        return spec
    if spec in REWARDS:
        return REWARDS[spec]
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise UsageError(f"unknown reward {spec!r}: expected {', '.join(REWARDS)} or module:function")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"reward {spec!r}: cannot load it ({exc})") from None
    if not callable(fn):
        raise UsageError(f"reward {spec!r} is a {type(fn).__name__}, expected a function reward(episode) -> float")
    return fn


def reward_name(reward: str | Callable) -> str:
    if isinstance(reward, str):
        return reward
    for name, fn in REWARDS.items():
        if fn is reward:
            return name
    return f"{getattr(reward, '__module__', '?')}:{getattr(reward, '__qualname__', type(reward).__name__)}"
