"""The sequential gate: the confidence sequence covers at its level, verdicts err no more than the fixed gate's,
and settled criteria stop early. Statistical tests: each compares an error count with a binomial quantile, so a
broken construction fails them."""

from __future__ import annotations

import math
import random

import pytest

from sandbox.errors import UsageError
from sandbox.evaluation import evaluate, sequential
from sandbox.evaluation.confseq import ConfidenceSequence
from sandbox.evaluation.draw import draw_cases
from sandbox.evaluation.gate import DEFAULT_GATE, check, parse_gate
from sandbox.evaluation.report import Record, Report
from sandbox.evaluation.sequential import ROUND, run_sequential


def binomial_quantile(n: int, p: float, q: float = 0.999) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= q."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if total >= q:
            return k
    return n


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
def test_the_sequence_covers_the_mean_at_every_look(p: float) -> None:
    alpha, seeds = 0.05, 300
    truth = round(p * 200)  # p on the grid of 200 candidates
    misses = 0
    for seed in range(seeds):
        rng, cs = random.Random(seed), ConfidenceSequence(alpha, grid=200)
        for _ in range(150):
            cs.add([float(rng.random() < p)])
        misses += truth not in cs.alive  # a candidate once rejected stays rejected
    assert misses <= binomial_quantile(seeds, alpha)


def test_blocks_that_mix_strata_cover_the_pooled_mean() -> None:
    alpha, seeds, means = 0.05, 300, (0.2, 0.9, 0.6)
    truth = round(sum(means) / len(means) * 300)
    misses = 0
    for seed in range(seeds):
        rng, cs = random.Random(seed), ConfidenceSequence(alpha, grid=300)
        for _ in range(60):
            cs.add([float(rng.random() < m) for m in means])
        misses += truth not in cs.alive
    assert misses <= binomial_quantile(seeds, alpha)


class Scripted:
    """A runner whose agent succeeds on a case with a known probability per tier (and always clean)."""

    def __init__(self, rates: dict[str, float], seed: int) -> None:
        self.rates, self.rng, self.ran = rates, random.Random(seed), 0

    def run_batches(self, agent, cases, batch_size=64, max_steps=None, progress=None):
        self.ran += len(cases)
        out = []
        for case in cases:
            tier = max(p.tier for p in case.perturbations)
            success = self.rng.random() < self.rates[tier]
            out.append(Record(
                test="t", agent="scripted", case=case.key(), label="", task=case.task.id, family=case.task.family,
                n_calls=1, perturbations=tuple(p.name for p in case.perturbations), tier=tier, solvable=True,
                outcome="success" if success else "wrong_answer", success=success, tool_errors=0, calls=1,
                clean_outcome="success", clean_success=True, clean_solvable=True, clean_tool_errors=0, clean_calls=1,
                stack=tuple(p.to_dict() for p in case.perturbations),
            ))  # fmt: skip
        return out


CASES = draw_cases(["perception", "interaction"], n=100, seed=0)


@pytest.fixture(autouse=True)
def coarse_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A grid of 250 candidates (0.004 apart) keeps hundreds of simulated gates fast; the rule is the same."""
    monkeypatch.setattr(sequential, "GRID", 250)


def sequential_verdict(rates: dict[str, float], gate: str, seed: int) -> tuple[str, int]:
    runner = Scripted(rates, seed)
    records, meta = run_sequential(runner, None, CASES, parse_gate(gate), lambda r, c: check(r, [c]).checks[0])  # type: ignore[arg-type]  # a scripted runner stands in for Runner
    report = Report(records, {"sequential": meta})
    return check(report, gate).verdict, runner.ran


@pytest.mark.parametrize("gate", ["perception.success>=0.8", "perception.success<=0.8"])
def test_verdicts_at_the_threshold_err_no_more_often_than_the_level(gate: str) -> None:
    """The rate is the threshold: a FAIL is wrong either way. One side of the sequence (0.0125) and of the fixed-n
    look (0.0125) allow at most 2.5%; a Wilson interval read after every round, as if the sample had been fixed, gives
    11% (4,000 simulated runs), which this bound catches 98 times in 100."""
    seeds = 150
    verdicts = [sequential_verdict({"perception": 0.8, "interaction": 0.5}, gate, s)[0] for s in range(seeds)]
    assert verdicts.count("FAIL") <= binomial_quantile(seeds, 0.025, q=0.99)


def test_a_delta_criterion_at_its_threshold_errs_no_more_often_than_the_level() -> None:
    seeds = 150
    verdicts = [sequential_verdict({"perception": 0.8, "interaction": 0.8}, "all.delta>=-20", s)[0]
                for s in range(seeds)]  # fmt: skip
    assert verdicts.count("FAIL") <= binomial_quantile(seeds, 0.05)  # the truth is -20 points: the clean twins all pass


def test_a_settled_criterion_stops_early_and_an_open_one_runs_to_n() -> None:
    seeds = 20
    clear = [sequential_verdict({"perception": 0.99, "interaction": 0.1}, "perception.success>=0.7", s)
             for s in range(seeds)]  # fmt: skip
    assert all(v == "PASS" for v, _ in clear)
    assert sum(ran for _, ran in clear) / seeds <= 40  # of the 100 perception cases; interaction runs none
    _, ran = sequential_verdict({"perception": 0.8, "interaction": 0.1}, "perception.success>=0.8", 0)
    assert ran == 100


def test_on_the_oracle_and_the_static_baseline_the_verdicts_match_the_fixed_gates_for_fewer_episodes() -> None:
    for agent, expected in (("oracle", "PASS"), ("static", "FAIL")):
        fixed = evaluate(agent, n=30, cache_dir=None)
        sequential = evaluate(agent, n=30, cache_dir=None, sequential=DEFAULT_GATE)
        assert check(fixed, DEFAULT_GATE).verdict == check(sequential, DEFAULT_GATE).verdict == expected
        assert len(sequential.records) < len(fixed.records)
        drawn = [c.key() for c in draw_cases("all", 30, 0) if c.perturbations[0].tier == "perception"]
        ran = sequential.meta["sequential"]["groups"]["perception"]["order"]
        assert ran == drawn[: len(ran)] and len(ran) % ROUND == 0
        again = Report.from_dict(sequential.to_dict())
        assert check(again, DEFAULT_GATE).message() == check(sequential, DEFAULT_GATE).message()


def test_a_sequential_gate_needs_criteria() -> None:
    with pytest.raises(UsageError, match="needs criteria"):
        evaluate("oracle", n=5, cache_dir=None, sequential=[])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sequential"], "--sequential stops criteria at their thresholds: give them with --gate"),
        (["--sequential", "--gate", "clean.success>=0.5", "--baseline", "b.json"], "--baseline reads every case"),
    ],
)
def test_a_sequential_gate_without_criteria_or_with_a_baseline_is_misuse(tmp_path, argv, message):
    from tests.commands import openagent

    (tmp_path / "b.json").write_text(evaluate("oracle", tiers=1, n=1, cache_dir=None).to_json())
    result = openagent("eval", "--agent", "oracle", "--n", "2", "--no-cache", *argv, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr.strip().splitlines()[-1]


def test_openagent_gate_reads_a_sequential_report_as_it_ran(tmp_path):
    from tests.commands import openagent

    path = tmp_path / "r.json"
    ran = openagent("eval", "--agent", "static", "--n", "30", "--no-cache", "--json", str(path), "--gate",
                    "all.delta>=-20", "--sequential", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "sequential gate:" in ran.stdout
    again = openagent("gate", str(path), "--gate", "all.delta>=-20", cwd=tmp_path)
    assert again.returncode == 1
    assert "confidence sequence" in again.stdout and "settled after" in again.stdout


def test_tool_errors_and_episodes_are_read_at_the_fixed_n_only():
    for gate in ("perception.tool_errors<=0.5", "perception.episodes>=10"):
        verdict, ran = sequential_verdict({"perception": 0.99, "interaction": 0.5}, gate, 0)
        assert (verdict, ran) == ("PASS", 100), gate
