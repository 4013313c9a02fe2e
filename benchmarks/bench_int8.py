"""Evaluation with int8 weights: a model agent's episodes per second and success, its default dtype (bf16 where
the CPU computes in it, else fp32) against torch's dynamic int8 quantization of its linear layers, side by side
in one run (default, int8, default again).

    HF_HUB_OFFLINE=1 python benchmarks/bench_int8.py --agent DIR --n 8

``n`` clean tasks of the POI test split (seed 1). Writes ``benchmarks/results/int8.json``. A lever measured
and rejected (docs/experiments.md): it is not built into ``HFAgent``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write


def agent_for(path: str, mode: str):
    from training.inference.model_agent import HFAgent

    agent = HFAgent(path)
    if mode == "int8":
        import torch
        from torch.ao.quantization import quantize_dynamic

        with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao, still shipped
            warnings.simplefilter("ignore")
            # Dynamic quantization computes in float32: a bf16 model is cast first.
            model = quantize_dynamic(agent.model.float(), {torch.nn.Linear}, dtype=torch.qint8)
        agent = HFAgent(model=model, tokenizer=agent.tokenizer, name=agent.name)
    return agent


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
    for mode in ("default", "int8", "default"):
        agent = agent_for(args.agent, mode)
        t = time.perf_counter()
        episodes = run_in_batches(agent, cases, args.batch_size)
        seconds = time.perf_counter() - t
        rate = success_rate(episodes)
        dtype = str(agent.generator.dtype).removeprefix("torch.") + ("+int8" if mode == "int8" else "")
        run = {"mode": mode, "dtype": dtype,
               "seconds": round(seconds, 1), "episodes_per_second": round(len(cases) / seconds, 3),
               "success": str(rate), "generated_tokens": agent.stats["generated"],
               "decode_s": round(agent.stats["decode_s"], 1)}  # fmt: skip
        result["runs"].append(run)
        print(run, flush=True)
    default = [r["episodes_per_second"] for r in result["runs"] if r["mode"] == "default"]
    result["int8_over_default"] = round(result["runs"][1]["episodes_per_second"] / (sum(default) / len(default)), 2)
    print(f"int8 / default episodes per second: {result['int8_over_default']}x")
    write("int8", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
