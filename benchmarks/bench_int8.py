"""Evaluation with int8 weights: a model agent's episodes per second and success, fp32 against torch's dynamic
int8 quantization of its linear layers, side by side in one run (fp32, int8, fp32 again).

    HF_HUB_OFFLINE=1 python benchmarks/bench_int8.py --agent DIR --n 8

``n`` clean tasks of the POI test split (seed 1), ``HFAgent(quantize="int8")`` against the default. Writes
``benchmarks/results/int8.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write


def agent_for(path: str, mode: str):
    from training.inference.model_agent import HFAgent

    return HFAgent(path, quantize="int8" if mode == "int8" else None)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agent", required=True, help="a checkpoint directory (hf: form without the prefix)")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()

    from sandbox import success_rate, tasks
    from sandbox.case import Case
    from sandbox.evaluation import run_in_batches

    cases = [Case(t) for t in tasks("poi", "test", args.n, 1)]
    result: dict = {"agent": args.agent, "episodes": len(cases), "runs": []}
    for mode in ("fp32", "int8", "fp32"):
        agent = agent_for(args.agent, mode)
        t = time.perf_counter()
        episodes = run_in_batches(agent, cases, args.batch_size)
        seconds = time.perf_counter() - t
        rate = success_rate(episodes)
        run = {"mode": mode, "seconds": round(seconds, 1), "episodes_per_second": round(len(cases) / seconds, 3),
               "success": str(rate), "generated_tokens": agent.stats["generated"],
               "decode_s": round(agent.stats["decode_s"], 1)}  # fmt: skip
        result["runs"].append(run)
        print(run, flush=True)
    fp32 = [r["episodes_per_second"] for r in result["runs"] if r["mode"] == "fp32"]
    result["int8_over_fp32"] = round(result["runs"][1]["episodes_per_second"] / (sum(fp32) / len(fp32)), 2)
    print(f"int8 / fp32 episodes per second: {result['int8_over_fp32']}x")
    write("int8", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
