"""The sequential gate against the fixed one: episodes and wall time to the same verdicts, side by side in one run.

    python benchmarks/bench_sequential.py                       # oracle, static, paced, seeds 0-9, n=50
    python benchmarks/bench_sequential.py --agents hf:PATH --seeds 1
    python benchmarks/bench_sequential.py --simulate 300          # error rates on simulated agents of known rates

``paced`` is the oracle answering each batch of turns after ``--latency`` seconds (default 0.05), a stand-in for an
engine whose step costs the same whatever the batch (latency-bound: what rounds cost in wall time shows there);
``busy`` answers after ``--per-turn`` seconds per turn of the batch (default 0.005), an engine whose step costs in
proportion to the batch (throughput-bound, a CPU model).

For each agent, gate and seed: the fixed sample run whole and gated with 95% intervals, then the same sample run in
rounds (``evaluate(sequential=gate)``), each criterion stopped once its confidence sequence settled it. Prints the
episodes each ran, the wall time, whether every criterion got the same verdict, and the load average; writes
``benchmarks/results/bench_sequential.json``. No episode cache: each run pays for all its episodes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write

from sandbox.agents import OracleAgent
from sandbox.evaluation import evaluate
from sandbox.evaluation.gate import DEFAULT_GATE, check, parse_gate

GATES = {
    "default": DEFAULT_GATE,
    "tiers": "perception.success>=0.7 interaction.success>=0.7 reasoning.success>=0.7 internalization.refusal>=0.7",
}


class Paced(OracleAgent):
    latency = 0.05
    per_turn = 0.0

    def fingerprint(self) -> str:
        return f"paced-oracle-{self.latency}-{self.per_turn}"

    def act(self, turns):
        time.sleep(self.latency + self.per_turn * len(turns))
        return super().act(turns)


class Busy(Paced):
    latency = 0.0
    per_turn = 0.005


def one(agent: str, gate: str, n: int, seed: int, batch_size: int) -> dict:
    out = {}
    for mode, sequential in (("fixed", None), ("sequential", gate)):
        start = time.perf_counter()
        who = {"paced": Paced, "busy": Busy}[agent]() if agent in ("paced", "busy") else agent
        report = evaluate(who, n=n, seed=seed, cache_dir=None, sequential=sequential, batch_size=batch_size)
        wall = time.perf_counter() - start
        result = check(report, gate)
        out[mode] = {
            "episodes": report.meta["episodes_run"],
            "cases": len(report.records),
            "wall_s": round(wall, 3),
            "verdict": result.verdict,
            "verdicts": {c.text: c.verdict for c in result.checks},
        }
    out["same_verdicts"] = out["fixed"]["verdicts"] == out["sequential"]["verdicts"]
    return out


def simulate(seeds: int, n: int = 100, threshold: float = 0.8) -> list[dict]:
    """``perception.success>=threshold`` on an agent that succeeds with probability ``rate`` on each case: how often
    each gate gives the wrong verdict (PASS below the threshold, FAIL above it), and how many cases it runs."""
    import random

    from sandbox.evaluation.draw import draw_cases
    from sandbox.evaluation.report import Record, Report
    from sandbox.evaluation.sequential import run_sequential
    from sandbox.metrics import wilson

    cases = draw_cases(["perception"], n=n, seed=0)
    gate = f"perception.success>={threshold}"
    criteria = parse_gate(gate)

    def fixed_check(report, c):
        return check(report, [c]).checks[0]

    class Coin:
        def __init__(self, rate: float, rng: random.Random) -> None:
            self.rate, self.rng, self.ran = rate, rng, 0

        def run_batches(self, agent, batch, batch_size=64, max_steps=None, progress=None):
            self.ran += len(batch)
            return [_record(c, self.rng.random() < self.rate) for c in batch]

    def _record(case, success: bool) -> Record:
        return Record(test="t", agent="coin", case=case.key(), label="", task=case.task.id, family="f", n_calls=1,
                      perturbations=tuple(p.name for p in case.perturbations), tier="perception", solvable=True,
                      outcome="success" if success else "wrong_answer", success=success, tool_errors=0, calls=1,
                      clean_outcome="success", clean_success=True, clean_solvable=True, clean_tool_errors=0,
                      clean_calls=1, stack=tuple(p.to_dict() for p in case.perturbations))  # fmt: skip

    out = []
    for rate in (0.5, 0.7, 0.76, 0.8, 0.84, 0.9, 0.97):
        wrong = {"fixed": 0, "sequential": 0}
        inconclusive = {"fixed": 0, "sequential": 0}
        ran = 0
        for seed in range(seeds):
            rng = random.Random(seed)
            k = sum(rng.random() < rate for _ in range(n))
            low, high = wilson(k, n)
            fixed = "PASS" if low >= threshold else "FAIL" if high < threshold else "INCONCLUSIVE"
            coin = Coin(rate, random.Random(seed))
            records, meta = run_sequential(coin, None, cases, criteria, fixed_check)
            sequential = check(Report(records, {"sequential": meta}), gate).verdict
            ran += coin.ran
            for mode, verdict in (("fixed", fixed), ("sequential", sequential)):
                wrong[mode] += verdict == ("PASS" if rate < threshold else "FAIL" if rate > threshold else "")
                inconclusive[mode] += verdict == "INCONCLUSIVE"
        row = {"rate": rate, "seeds": seeds, "wrong_fixed": wrong["fixed"] / seeds,
               "wrong_sequential": wrong["sequential"] / seeds, "inconclusive_fixed": inconclusive["fixed"] / seeds,
               "inconclusive_sequential": inconclusive["sequential"] / seeds,
               "cases_sequential": ran / seeds}  # fmt: skip
        print(f"rate {rate:.2f}: wrong verdicts fixed {row['wrong_fixed']:.3f}, "
              f"sequential {row['wrong_sequential']:.3f}; inconclusive fixed {row['inconclusive_fixed']:.2f}, "
              f"sequential {row['inconclusive_sequential']:.2f}; "
              f"cases run: fixed {n}, sequential {row['cases_sequential']:.1f}")  # fmt: skip
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="oracle,static,paced,busy")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per batch of turns of 'paced'")
    parser.add_argument("--per-turn", type=float, default=0.005, help="seconds per turn of 'busy'")
    parser.add_argument("--gates", default="default,tiers", help=f"names of {sorted(GATES)} or criteria")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--simulate", type=int, default=0, metavar="SEEDS", help="simulated agents of known rates only")
    args = parser.parse_args()
    if args.simulate:
        print(f"perception.success>=0.8 at n=100, {args.simulate} seeds per rate; load {os.getloadavg()[0]:.1f}")
        write("bench_sequential_simulated", {"results": simulate(args.simulate)})
        return
    Paced.latency, Busy.per_turn = args.latency, args.per_turn
    results = []
    print(f"n={args.n} per tier, seeds 0-{args.seeds - 1}, load average at start {os.getloadavg()[0]:.1f}")
    print("episodes: distinct episodes run (cases and twins), mean over seeds; wall: seconds, mean over seeds")
    header = f"{'agent':<10} {'gate':<8} {'episodes fixed':>14} {'sequential':>10} {'ratio':>6} "
    header += f"{'wall fixed s':>12} {'sequential s':>12} {'ratio':>6} {'same verdicts':>13} {'verdict':>14} "
    header += f"{'load':>5}"
    print(header)
    for agent in args.agents.split(","):
        for name in args.gates.split(","):
            gate = GATES.get(name, name)
            runs = [one(agent, gate, args.n, seed, args.batch_size) for seed in range(args.seeds)]
            ep_f = statistics.mean(r["fixed"]["episodes"] for r in runs)
            ep_s = statistics.mean(r["sequential"]["episodes"] for r in runs)
            wall_f = statistics.mean(r["fixed"]["wall_s"] for r in runs)
            wall_s = statistics.mean(r["sequential"]["wall_s"] for r in runs)
            same = sum(r["same_verdicts"] for r in runs)
            verdicts = sorted({r["fixed"]["verdict"] for r in runs})
            load = os.getloadavg()[0]
            print(
                f"{agent[:10]:<10} {name[:8]:<8} {ep_f:>14.0f} {ep_s:>10.0f} {ep_s / ep_f:>6.2f} {wall_f:>12.2f} "
                f"{wall_s:>12.2f} {wall_s / wall_f:>6.2f} {f'{same}/{len(runs)}':>13} {'/'.join(verdicts):>14} "
                f"{load:>5.1f}"
            )
            results.append({
                "agent": agent, "gate": gate, "n": args.n, "seeds": args.seeds, "episodes_fixed": ep_f,
                "episodes_sequential": ep_s, "wall_fixed_s": wall_f, "wall_sequential_s": wall_s,
                "same_verdicts": same, "load": load, "runs": runs,
            })  # fmt: skip
    write("bench_sequential", {"results": results})


if __name__ == "__main__":
    main()
