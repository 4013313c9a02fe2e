"""What OpenMP's wait policy does to the model agent's decoding on this machine: the same scripted
episodes (``bench_model_agent``'s: 3 turns, greedy) run in fresh processes that alternate between
OpenMP's default (threads spin between parallel regions; what ``training.inference`` did before it set
the policy) and ``OMP_WAIT_POLICY=PASSIVE`` (what it sets now, before torch loads), one pair after another
so that both see the same load. Greedy replies must be the same in both (checked). Prints wall and CPU
seconds, ms a decoding step, episodes/s and the load average beside each run; writes
benchmarks/results/decode_threads.json.

    .venv/bin/python benchmarks/bench_decode_threads.py [--episodes 4] [--batch 4] [--pairs 2]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "decode_threads.json"
MODES = ("spin", "passive")


def child(mode: str, args: argparse.Namespace) -> dict:
    """One measurement in this process. ``spin`` loads torch before ``training.inference`` can set the policy."""
    if mode == "spin":
        importlib.import_module("torch")
    importlib.import_module("training.inference")  # sets the policy, unless torch is already loaded
    import torch

    from training.inference.model_agent import HFAgent

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_model_agent import run, scripted_episodes

    agent = HFAgent(args.model, dtype=args.dtype, max_new_tokens=args.max_new_tokens)
    episodes = scripted_episodes("poi", args.episodes, args.seed)
    load = os.getloadavg()[0]
    cpu = time.process_time()
    result = run(agent, episodes, args.batch, args.turns)
    result["cpu_s"] = round(time.process_time() - cpu, 2)
    result["ms_per_decode_step"] = round(1000 * result["decode_s"] / max(1, result["decode_steps"]), 1)
    result["load_average"] = load
    result["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY", "(default)")
    result["threads"] = torch.get_num_threads()
    result["dtype"] = str(agent.generator.dtype)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default", help="hf:PATH without the hf: (default: the default base)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=2, help="spin/passive pairs, alternated (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args)))
        return

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    print(
        f"{args.episodes} scripted POI episodes, {args.turns} turns, batch {args.batch}, greedy, "
        f"at most {args.max_new_tokens} new tokens a turn; {os.cpu_count()} CPUs",
        flush=True,
    )
    for _ in range(args.pairs):
        for mode in MODES:
            command = [sys.executable, __file__, *sys.argv[1:], "--child", mode]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"the {mode} run failed:\n{done.stderr[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            runs[mode].append(result)
            print(
                f"  {mode:<8} {result['dtype']:<15} threads {result['threads']}  {result['seconds']:>7.1f} s wall  "
                f"{result['cpu_s']:>7.1f} s CPU  {result['ms_per_decode_step']:>7.1f} ms/step  "
                f"{result['episodes_per_s']:.3f} episodes/s  load {result['load_average']:.1f}",
                flush=True,
            )

    replies = [r.pop("_replies") for mode in MODES for r in runs[mode]]
    same = all(other == replies[0] for other in replies[1:])
    median = {mode: statistics.median(r["episodes_per_s"] for r in runs[mode]) for mode in MODES}
    ratios = [p["episodes_per_s"] / s["episodes_per_s"] for s, p in zip(runs["spin"], runs["passive"], strict=True)]
    summary = {
        "episodes_per_s_median": median,
        "passive_over_spin_per_pair": [round(r, 2) for r in ratios],
        "same_replies": same,
    }
    print(
        f"episodes/s, median: spin {median['spin']:.3f}, passive {median['passive']:.3f}; passive/spin per pair "
        f"{', '.join(f'{r:.2f}x' for r in ratios)}; same replies: {same}"
    )
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "arguments": {k: v for k, v in vars(args).items() if k != "child"},
        "runs": runs,
        "summary": summary,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(out)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
