import math

import pytest

import sandbox
from sandbox import OracleAgent, ScriptedAgent, make_env, run_episodes
from sandbox.metrics import Delta, Rate, delta, pass_hat_k, refusal_rate, success_rate, tool_error_rate, wilson


def test_wilson_matches_known_values():
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_delta_in_points_with_newcombe_interval():
    d = Delta(Rate(30, 100), Rate(90, 100))
    assert d.points == pytest.approx(-60.0)
    low, high = d.interval
    assert low < -60 < high and high < 0
    assert "-60.0" in str(d)


def test_metrics_over_episodes():
    tasks = sandbox.tasks("poi", "test", 40)
    oracle = run_episodes(OracleAgent(), [make_env("poi", t) for t in tasks])
    wrong = run_episodes(ScriptedAgent(['<tool_call>{"name": "nope", "arguments": {}}</tool_call>', "no idea"]),
                         [make_env("poi", t) for t in tasks])  # fmt: skip
    assert success_rate(oracle).value == 1.0 and success_rate(wrong).value == 0.0
    assert tool_error_rate(oracle).k == 0 and tool_error_rate(wrong).value == 1.0
    assert refusal_rate(oracle).value == 1.0 and refusal_rate(oracle).n == sum(not t.solvable for t in tasks)
    assert refusal_rate(wrong).value == 0.0
    assert delta(wrong, oracle).points == pytest.approx(-100.0)


def test_pass_hat_k():
    tasks = sandbox.tasks("poi", "test", 2)
    good = run_episodes(OracleAgent(), [make_env("poi", tasks[0]) for _ in range(4)])
    bad = run_episodes(ScriptedAgent(["?"]), [make_env("poi", tasks[1])] * 2)
    mixed = good + bad + run_episodes(OracleAgent(), [make_env("poi", tasks[1])] * 2)
    assert pass_hat_k(good, 4) == 1.0
    # task 1 has 2 of 4 trials right: pass^2 = C(2,2)/C(4,2) = 1/6
    assert pass_hat_k(mixed, 2) == pytest.approx((1 + 1 / 6) / 2)
    with pytest.raises(ValueError, match="needs 5 trials"):
        pass_hat_k(good, 5)
