import math

import pytest

import sandbox
from sandbox import OracleAgent, ScriptedAgent, make_env, run_episodes
from sandbox.metrics import (
    Delta,
    Rate,
    delta,
    pass_hat_k,
    refusal_rate,
    success_rate,
    t95,
    tool_error_rate,
    wilson,
)


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


def _newcombe_10(r, s, t, u):
    """Newcombe's method 10 as biostatUZH's confIntPairedProportion writes it (R), transcribed term by term."""
    n = r + s + t + u
    p1, p2 = (r + s) / n, (r + t) / n
    (l1, u1), (l2, u2) = wilson(r + s, n), wilson(r + t, n)
    a = (r + s) * (t + u) * (r + t) * (s + u)
    b = r * u - s * t
    c = b - n / 2 if b > n / 2 else b if b < 0 else 0
    phi = c / math.sqrt(a) if a else 0
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = p1 - p2 + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return 100 * low, 100 * high


@pytest.mark.parametrize("table", [(12, 2, 1, 14), (20, 12, 2, 16), (5, 0, 10, 5), (1, 9, 8, 2), (3, 1, 1, 3)])
def test_the_paired_delta_is_newcombes_method_10(table):
    from sandbox.metrics import PairedDelta

    d = PairedDelta(*table)
    assert d.points == pytest.approx(100 * (table[1] - table[2]) / sum(table))
    assert d.interval == pytest.approx(_newcombe_10(*table))


def test_pairing_narrows_the_interval_and_nothing_measured_is_nan():
    from sandbox.metrics import PairedDelta

    paired = PairedDelta.of([(True, True)] * 30 + [(False, True)] * 10 + [(False, False)] * 10)
    unpaired = Delta(Rate(30, 50), Rate(40, 50))
    assert paired.points == pytest.approx(unpaired.points) == pytest.approx(-20.0)
    assert paired.interval[1] - paired.interval[0] < unpaired.interval[1] - unpaired.interval[0]
    assert all(math.isnan(x) for x in PairedDelta(0, 0, 0, 0).interval)


def test_t95_is_students_quantile():
    for df, table in ((1, 12.7062), (3, 3.1824), (11, 2.2010), (30, 2.0423), (120, 1.9799)):
        assert t95(df) == pytest.approx(table, abs=1e-3)
    with pytest.raises(ValueError, match="at least 1 degree"):
        t95(0)
