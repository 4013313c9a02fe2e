"""City renaming of gold trajectories: consistent everywhere, never to a sandbox city, at the share asked."""

from __future__ import annotations

import random

import pytest

from sandbox import OracleAgent, make_env, run_episode, tasks
from sandbox.domains.poi.world import CITIES, CITY_SPLIT
from training.dataset import Trajectory
from training.rename import OTHER_CITIES, rename_cities, rename_share


def _gold(task):
    env = make_env("poi", task)
    episode = run_episode(OracleAgent(), env)
    return Trajectory(episode.messages, env.tool_specs(), task.family, ())


def test_other_cities_are_outside_the_sandbox():
    assert not {c for c, _, _ in CITIES} & set(OTHER_CITIES)
    assert len(set(OTHER_CITIES)) == len(OTHER_CITIES)


def test_the_city_is_replaced_in_every_message_and_call():
    task = next(t for t in tasks("poi", "train", 60, seed=1) if t.family == "distance")
    messages = _gold(task).messages
    city = next(c for c in CITY_SPLIT["train"] if c in messages[-1]["content"] or c in repr(messages))
    renamed = rename_cities(messages, CITY_SPLIT["train"], random.Random(0))
    new = next(c for c in OTHER_CITIES if c in repr(renamed))
    assert city not in repr(renamed)
    assert repr(renamed) == repr(messages).replace(city, new)
    assert city in repr(messages)  # the original is left as it was


def test_a_conversation_without_a_train_city_is_returned_unchanged():
    messages = [{"role": "user", "content": "Lisbonne is not Lisbon's word here"}]
    assert rename_cities(messages, ("Ghent",), random.Random(0)) is messages


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_rename_share(share):
    trajectories = [_gold(t) for t in tasks("poi", "train", 80, seed=2)]
    with_city = sum(any(c in repr(t.messages) for c in CITY_SPLIT["train"]) for t in trajectories)
    changed = rename_share(trajectories, "poi", share, seed=0)
    if share in (0.0, 1.0):
        assert changed == share * with_city
    else:
        assert 0.3 * with_city < changed < 0.7 * with_city
    assert sum(any(c in repr(t.messages) for c in OTHER_CITIES) for t in trajectories) == changed


def test_bad_share_is_refused():
    with pytest.raises(ValueError, match="rename_cities must be in"):
        rename_share([], "poi", 1.5, seed=0)
