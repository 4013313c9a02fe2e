"""How the model agent's generation fares on this machine's cores under three thread policies, alone and with a
second generating process beside it: the same scripted episodes (``bench_model_agent``'s: 3 turns, greedy) in
fresh processes, one after another, each policy in the same run.

- ``passive``: ``OMP_WAIT_POLICY=PASSIVE`` (idle OpenMP threads sleep) and torch's thread count, fixed: what
  ``training.inference`` set before generation timed its threads;
- ``spin``: OpenMP's default (idle threads spin a while) and the same fixed count;
- ``tuned``: OpenMP's default, the count chosen by timing decoding steps (``training.inference.threads``): now.

"beside itself" runs two processes of the policy at once (both are reported). Greedy replies must be the same in
every run (checked). Prints wall and CPU seconds, ms a decoding step, episodes/s, the load average and the
threads the run ended on; writes benchmarks/results/decode_threads.json.

    .venv/bin/python benchmarks/bench_decode_threads.py [--episodes 4] [--batch 4] [--rounds 1]
"""

from __future__ import annotations

import argparse
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
MODES = ("passive", "spin", "tuned")
SCENARIOS = ("alone", "beside itself")


def child(mode: str, args: argparse.Namespace) -> dict:
    """One measurement in this process (its OpenMP policy came with its environment)."""
    import torch

    from training.inference.model_agent import HFAgent
    from training.inference.threads import ThreadTuner

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_model_agent import run, scripted_episodes

    agent = HFAgent(args.model, dtype=args.dtype, max_new_tokens=args.max_new_tokens)
    agent.generator.threads = ThreadTuner(torch.get_num_threads(), tune=mode == "tuned")
    episodes = scripted_episodes("poi", args.episodes, args.seed)
    load = os.getloadavg()[0]
    cpu = time.process_time()
    result = run(agent, episodes, args.batch, args.turns)
    result["cpu_s"] = round(time.process_time() - cpu, 2)
    result["ms_per_decode_step"] = round(1000 * result["decode_s"] / max(1, result["decode_steps"]), 1)
    result["load_average"] = load
    result["threads"] = agent.generator.threads.chosen
    result["trials"] = agent.generator.threads.trials
    return result


def launch(mode: str, env: dict[str, str]) -> subprocess.Popen:
    policy = {"OMP_WAIT_POLICY": "PASSIVE"} if mode == "passive" else {}
    command = [sys.executable, __file__, *sys.argv[1:], "--child", mode]
    return subprocess.Popen(command, env={**env, **policy}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, mode: str) -> dict:
    out, err = process.communicate()
    if process.returncode != 0:
        sys.exit(f"the {mode} run failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default", help="hf:PATH without the hf: (default: the default base)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each cell, interleaved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args)))
        return

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    runs: dict[str, dict[str, list[dict]]] = {m: {s: [] for s in SCENARIOS} for m in MODES}
    print(
        f"{args.episodes} scripted POI episodes, {args.turns} turns, batch {args.batch}, greedy, "
        f"at most {args.max_new_tokens} new tokens a turn; {os.cpu_count()} CPUs",
        flush=True,
    )
    for _ in range(args.rounds):
        for scenario in SCENARIOS:
            for mode in MODES:
                processes = [launch(mode, env) for _ in range(1 if scenario == "alone" else 2)]
                for result in [finish(p, mode) for p in processes]:
                    runs[mode][scenario].append(result)
                    print(
                        f"  {mode:<8} {scenario:<14} {result['seconds']:>7.1f} s wall {result['cpu_s']:>7.1f} s CPU "
                        f"{result['ms_per_decode_step']:>7.1f} ms/step {result['episodes_per_s']:.3f} episodes/s "
                        f"load {result['load_average']:.1f}, ended on {result['threads']} thread(s)",
                        flush=True,
                    )

    replies = [r.pop("_replies") for m in MODES for s in SCENARIOS for r in runs[m][s]]
    same = all(other == replies[0] for other in replies[1:])
    rate = {
        m: {s: statistics.median(r["episodes_per_s"] for r in runs[m][s]) for s in SCENARIOS} for m in MODES
    }  # fmt: skip
    ratios = {f"tuned/{m} {s}": round(rate["tuned"][s] / rate[m][s], 2) for m in ("passive", "spin") for s in SCENARIOS}
    print("episodes/s, median: " + "; ".join(f"{m} {rate[m]['alone']:.3f} alone, {rate[m]['beside itself']:.3f} "
                                             "beside itself" for m in MODES))  # fmt: skip
    print("ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()) + f"; same replies: {same}")
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "arguments": {k: v for k, v in vars(args).items() if k != "child"},
        "runs": runs,
        "summary": {"episodes_per_s_median": rate, "ratios": ratios, "same_replies": same},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(out)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
