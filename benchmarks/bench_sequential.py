"""The sequential gate against the fixed one: episodes and wall time to the same verdicts, side by side in one run.

    python benchmarks/bench_sequential.py                       # oracle, static, paced, seeds 0-9, n=50
    python benchmarks/bench_sequential.py --agents hf:PATH --seeds 1

``paced`` is the oracle answering each batch of turns after ``--latency`` seconds (default 0.05), a stand-in for an
engine whose step costs the same whatever the batch: what rounds cost in wall time shows there, not on the oracle.

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
from sandbox.evaluation.gate import DEFAULT_GATE, check

GATES = {
    "default": DEFAULT_GATE,
    "tiers": "perception.success>=0.7 interaction.success>=0.7 reasoning.success>=0.7 internalization.refusal>=0.7",
}


class Paced(OracleAgent):
    latency = 0.05

    def fingerprint(self) -> str:
        return f"paced-oracle-{self.latency}"

    def act(self, turns):
        time.sleep(self.latency)
        return super().act(turns)


def one(agent: str, gate: str, n: int, seed: int, batch_size: int) -> dict:
    out = {}
    for mode, sequential in (("fixed", None), ("sequential", gate)):
        start = time.perf_counter()
        who = Paced() if agent == "paced" else agent
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="oracle,static,paced")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per batch of turns of 'paced'")
    parser.add_argument("--gates", default="default,tiers", help=f"names of {sorted(GATES)} or criteria")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    Paced.latency = args.latency
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
