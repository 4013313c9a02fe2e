"""SFT steps with glibc's default malloc against freed memory kept for reuse (``training.cpu.keep_freed_memory``),
side by side: each setting in a process of its own, taken in turns.

    python benchmarks/bench_malloc.py --base /path/to/SmolLM2-135M-Instruct-v2 --steps 14 --rounds 1

Each process trains LoRA on the demo's short task families (batches of 8, bf16 autocast where the CPU computes in
it) and reports its steps' seconds, system time and page faults. Prints the mean step (the first two left out as
warm-up) and the ratio; writes ``benchmarks/results/bench_malloc.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write

FAMILIES = ["phone", "hours", "weather", "best_rated", "unknown_place"]
WARMUP = 2


def worker(base: str, steps: int, keep: bool) -> dict:
    import resource
    import time

    from training import cpu

    if not keep:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        os.environ.setdefault("KMP_BLOCKTIME", "0")
    else:
        cpu.prepare()
    import torch

    from training import precision
    from training.batches import collate, plan_batches
    from training.config import SFTConfig
    from training.dataset import build_examples
    from training.loop import load_model
    from training.sft import batch_loss

    cfg = SFTConfig(out="unused", base=base, steps=steps, episodes=15 * steps, task_families=FAMILIES)
    model, tokenizer = load_model(cfg, Path(base))
    examples, _ = build_examples(cfg, tokenizer)
    plan = plan_batches(examples, cfg.batch_size, steps, 0)
    bf16 = precision.cpu_computes_bf16()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    before, seconds = resource.getrusage(resource.RUSAGE_SELF), []
    for step in range(steps):
        batch = collate([examples[i] for i in plan[step]], True)
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = batch_loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "keep_freed_memory": keep, "bf16": bf16, "step_seconds": [round(s, 3) for s in seconds],
        "mean_step_s": sum(seconds[WARMUP:]) / max(1, len(seconds) - WARMUP),
        "system_s": after.ru_stime - before.ru_stime, "user_s": after.ru_utime - before.ru_utime,
        "page_faults": after.ru_minflt - before.ru_minflt, "peak_rss_gib": after.ru_maxrss / 2**20,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="a base model directory (openagent base prints it)")
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--rounds", type=int, default=1, help="pairs of processes, taken in turns")
    parser.add_argument("--worker", choices=["default", "keep"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.base, args.steps, args.worker == "keep")))
        return
    runs: dict[str, list[dict]] = {"default": [], "keep": []}
    for _ in range(args.rounds):
        for setting in runs:
            argv = [sys.executable, __file__, "--base", args.base, "--steps", str(args.steps), "--worker", setting]
            done = subprocess.run(argv, capture_output=True, text=True, check=True, env={**os.environ})
            runs[setting].append(json.loads(done.stdout.strip().splitlines()[-1]))
    summary = {}
    for setting, results in runs.items():
        summary[setting] = {
            key: sum(r[key] for r in results) / len(results)
            for key in ("mean_step_s", "system_s", "user_s", "page_faults", "peak_rss_gib")
        }
        s = summary[setting]
        print(f"{setting:<8} step {s['mean_step_s']:.2f} s  system {s['system_s']:.1f} s  user {s['user_s']:.1f} s  "
              f"page faults {s['page_faults']:,.0f}  peak {s['peak_rss_gib']:.1f} GiB")  # fmt: skip
    ratio = summary["default"]["mean_step_s"] / summary["keep"]["mean_step_s"]
    load = os.getloadavg()[0]
    print(f"kept freed memory: {ratio:.2f}x the steps per second of glibc's default; load average {load:.1f}")
    write("bench_malloc", {"steps": args.steps, "rounds": args.rounds, "summary": summary, "ratio": ratio,
                           "runs": runs, "load": os.getloadavg()})  # fmt: skip


if __name__ == "__main__":
    main()
