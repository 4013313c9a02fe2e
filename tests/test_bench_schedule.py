"""``benchmarks/_schedule``: the ideal that ``bench_openai`` measures a run against."""

import importlib.util
import random
from pathlib import Path

import pytest

HELPER = Path(__file__).parent.parent / "benchmarks" / "_schedule.py"
_spec = importlib.util.spec_from_file_location("_schedule", HELPER)
assert _spec is not None and _spec.loader is not None
schedule = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(schedule)  # a benchmark's helper, loaded from its file: benchmarks/ stays off sys.path
Served, chains, ideal_wall, in_service, summary = (
    schedule.Served, schedule.chains, schedule.ideal_wall, schedule.in_service, schedule.summary
)  # fmt: skip


def test_equal_chains_that_fill_every_slot_take_their_total_over_the_window():
    assert ideal_wall([[0.5, 0.5]] * 8, window=4) == pytest.approx(2.0)
    assert ideal_wall([[1.0]] * 3, window=8) == pytest.approx(1.0)  # more slots than episodes


def test_an_episode_starts_in_the_first_slot_to_free_in_the_runners_order():
    # slot A: 3 s; slot B: 1 s, then the third episode (1 s), then the fourth (2 s): 4 s, not 3
    assert ideal_wall([[3.0], [1.0], [1.0], [2.0]], window=2) == pytest.approx(4.0)
    # the ideal keeps the runner's order: the longest episode last takes 4 s, first 3 s
    assert ideal_wall([[1.0], [1.0], [3.0]], window=2) == pytest.approx(4.0)
    assert ideal_wall([[3.0], [1.0], [1.0]], window=2) == pytest.approx(3.0)


def test_a_finite_batch_of_chains_cannot_keep_every_slot_busy():
    rng = random.Random(0)
    batch = [[rng.uniform(0.05, 0.5) for _ in range(rng.randint(2, 6))] for _ in range(768)]
    work = sum(map(sum, batch))
    wall = ideal_wall(batch, window=256)
    assert work / 256 < wall < work / 256 + max(map(sum, batch))  # greedy list scheduling's bounds
    assert work / 256 / wall < 0.8  # the old "in flight / mean latency" is out of reach by construction


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1, got 0"):
        ideal_wall([[1.0]], window=0)


def _log(spec: dict[str, list[tuple[float, float, float]]]) -> list[Served]:
    """A server log from ``{episode: [(arrived, replied, latency), ...]}``, turns in order, shuffled as replies
    come back out of order."""
    log = [Served(e, k, a, r, lat) for e, turns in spec.items() for k, (a, r, lat) in enumerate(turns)]
    random.Random(1).shuffle(log)
    return log


def test_chains_follow_turn_order_and_the_runners_episode_order():
    log = _log({"a": [(0, 1, 1.0), (1.1, 1.6, 0.5)], "b": [(0, 0.2, 0.2)]})
    assert chains(log, ["b", "a", "never answered"]) == [[0.2], [1.0, 0.5], []]


def test_in_service_is_the_time_weighted_mean_of_requests_held():
    log = _log({"a": [(0, 2, 2.0)], "b": [(1, 3, 2.0)]})
    assert in_service(log, 0, 4) == pytest.approx(1.0)  # 4 request-seconds over 4 s
    assert in_service(log, 1, 2) == pytest.approx(2.0)  # both held throughout
    assert in_service(log, 2, 2) == 0.0


def test_a_run_as_fast_as_its_ideal_has_ratio_one_and_no_turnaround():
    # two slots, three episodes; each request arrives the instant the one before it was answered
    spec = {"a": [(0, 1, 1.0), (1, 2, 1.0)], "b": [(0, 0.5, 0.5)], "c": [(0.5, 1.5, 1.0)]}
    figures = summary(_log(spec), ["a", "b", "c"], window=2, start=0.0, end=2.0)
    assert figures["ideal_s"] == 2.0 and figures["ratio"] == 1.0
    assert figures["turnaround_ms"][0] == 0.0 and figures["ramp_ms"] == 0.0 and figures["late_ms"] == 0.0
    assert figures["busy"] == 1.0  # both slots at the server until c's first request
    mean = 3.5 / 4
    assert figures["limit_rps"] == round(2 / mean, 2)
    assert figures["drain"] == pytest.approx(4 / 2.0 / (2 / mean), abs=1e-3)


def test_a_client_that_dawdles_between_turns_shows_in_turnaround_and_ratio():
    # the same episodes, each next request sent 0.1 s after the reply, the server 0.05 s late on a's first reply
    spec = {"a": [(0, 1.05, 1.0), (1.15, 2.15, 1.0)], "b": [(0, 0.5, 0.5)], "c": [(0.6, 1.6, 1.0)]}
    figures = summary(_log(spec), ["a", "b", "c"], window=2, start=0.0, end=2.2)
    assert figures["ideal_s"] == 2.0 and figures["ratio"] == round(2.0 / 2.2, 3)
    assert figures["turnaround_ms"] == [pytest.approx(100.0), pytest.approx(100.0)]
    assert figures["late_ms"] == pytest.approx(12.5)
    assert figures["busy"] < 1.0
