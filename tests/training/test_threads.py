"""Generation's thread count is chosen by timing decoding steps, and follows the machine as its load moves."""

from __future__ import annotations

import pytest

from training.inference import threads
from training.inference.threads import ThreadTuner

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


class Machine:
    """A fake clock whose decoding step costs what ``cost`` says for the thread count torch runs on."""

    def __init__(self, cost: dict[int, float]):
        self.cost, self.now, self.ran = cost, 0.0, []

    def clock(self) -> float:
        return self.now

    def step(self) -> int:
        count = torch.get_num_threads()
        self.ran.append(count)
        self.now += self.cost[count]
        return count


def decode(tuner: ThreadTuner, machine: Machine, steps: int) -> None:
    """One call of ``steps`` decoding steps; the machine's step is also the probe of the first call."""
    with tuner.call(machine.step):
        for _ in range(steps):
            tuner.step(machine.step)


@pytest.mark.parametrize(("cost", "chosen"), [({2: 0.04, 1: 0.06}, 2), ({2: 0.11, 1: 0.06}, 1)])
def test_the_faster_count_is_kept_after_steps_timed_alternately(cost, chosen):
    machine = Machine(cost)
    tuner = ThreadTuner(2, clock=machine.clock)
    decode(tuner, machine, 20)
    assert machine.ran[: 2 * threads.TRIAL_PAIRS] == [2, 1] * threads.TRIAL_PAIRS
    assert tuner.chosen == chosen and tuner.trials == 1
    assert set(machine.ran[2 * threads.TRIAL_PAIRS :]) == {chosen}


def test_a_clear_win_ends_the_trial_after_one_pair():
    machine = Machine({2: 1.0, 1: 0.06})  # threads that spin on cores another process wants
    tuner = ThreadTuner(2, clock=machine.clock)
    decode(tuner, machine, 3)
    assert machine.ran == [2, 1, 1, 1, 1] and tuner.chosen == 1  # the probe's pair, then three steps


def test_a_trial_after_retry_seconds_follows_the_load():
    machine = Machine({2: 0.5, 1: 0.06})
    tuner = ThreadTuner(2, clock=machine.clock)
    decode(tuner, machine, 2)
    assert tuner.chosen == 1
    machine.cost = {2: 0.04, 1: 0.06}  # the other process ended
    decode(tuner, machine, int(threads.RETRY_S / 0.06) + 2 * threads.TRIAL_PAIRS + 3)
    assert tuner.chosen == 2 and tuner.trials == 2


def test_a_step_far_slower_than_usual_starts_a_trial_at_once():
    machine = Machine({2: 0.04, 1: 0.06})
    tuner = ThreadTuner(2, clock=machine.clock)
    decode(tuner, machine, 10)
    assert tuner.chosen == 2
    machine.cost = {2: 1.0, 1: 0.06}  # another process began to compute: spinning threads wait for cores
    machine.ran.clear()
    decode(tuner, machine, 4)
    assert machine.ran == [2, 2, 1, 1] and tuner.chosen == 1


def test_trials_come_less_often_while_they_keep_the_count():
    machine = Machine({2: 0.04, 1: 0.06})
    tuner = ThreadTuner(2, clock=machine.clock)
    trial_steps = 2 * threads.TRIAL_PAIRS
    decode(tuner, machine, trial_steps + int(threads.RETRY_S / 0.04) + trial_steps + 1)
    assert tuner.trials == 2  # the first, and one after RETRY_S seconds
    decode(tuner, machine, int(threads.RETRY_S / 0.04))
    assert tuner.trials == 2  # the next waits twice as long
    decode(tuner, machine, int(threads.RETRY_S / 0.04) + trial_steps + 1)
    assert tuner.trials == 3


def test_the_first_call_settles_the_count_before_its_prefill_and_restores_torchs():
    torch.set_num_threads(2)
    machine = Machine({2: 0.5, 1: 0.06})
    tuner = ThreadTuner(2, clock=machine.clock)
    with tuner.call(machine.step):
        assert machine.ran == [2, 1] and torch.get_num_threads() == 1  # what the prefill runs on
    assert torch.get_num_threads() == 2
    with tuner.call(machine.step):
        pass
    assert machine.ran == [2, 1]  # once only


def test_a_pinned_count_is_never_tried_against_another():
    machine = Machine({2: 0.5, 1: 0.06})
    tuner = ThreadTuner(2, tune=False, clock=machine.clock)
    decode(tuner, machine, int(threads.RETRY_S / 0.5) + 5)
    assert tuner.trials == 0 and set(machine.ran) == {2}


def test_one_thread_is_never_tried_against_itself():
    machine = Machine({1: 0.05})
    torch.set_num_threads(1)
    tuner = ThreadTuner(1, clock=machine.clock)
    decode(tuner, machine, int(threads.RETRY_S / 0.05) + 5)
    assert tuner.trials == 0 and set(machine.ran) == {1}
