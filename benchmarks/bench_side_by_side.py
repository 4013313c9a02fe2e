"""The demo's two arms (PAFT on a report's rows, SFT continued on clean episodes, from one SFT checkpoint) trained
one after the other with all the CPUs each, against side by side with a share each (``training.child``), taken in
turns.

    python benchmarks/bench_side_by_side.py --base ~/.cache/openagent/loop/sft \\
        --rows ~/.cache/openagent/loop/paft-rows.jsonl --steps 4 --rounds 1

Each training runs in a process of its own as the demo's do (``training.child.train``), into a fresh folder. Prints
each way's wall seconds for both arms and the ratio; writes ``benchmarks/results/bench_side_by_side.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write

FAMILIES = ["phone", "hours", "weather", "best_rated", "unknown_place"]


def arms(base: str, rows: str, steps: int, batch: int, threads: int, folder: Path) -> list:
    from training.config import SFTConfig

    common = dict(base=base, steps=steps, batch_size=batch, task_families=FAMILIES, warmup=1, seed=1,
                  save_every=0, threads=threads, lr=1e-3)  # fmt: skip
    paft = SFTConfig(out=str(folder / "paft"), episodes=steps * batch // 2, rows=rows, **common)
    continued = SFTConfig(out=str(folder / "sft-continued"), episodes=steps * batch, **common)
    return [("PAFT", paft), ("SFT-continued", continued)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the SFT checkpoint both arms start from")
    parser.add_argument("--rows", required=True, help="PAFT rows (openagent data from-report)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from training import child, cpu
    from training.runs import read_meta

    cpus = cpu.available_cpus()
    ways = {"one after the other": cpus, "side by side": max(1, cpus // 2)}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    rates: dict[str, list[list[float]]] = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way, threads in ways.items():
            with tempfile.TemporaryDirectory() as folder:
                runs = arms(args.base, args.rows, args.steps, args.batch_size, threads, Path(folder))
                start = time.perf_counter()
                if way == "side by side":
                    child.train(runs, print)
                else:
                    for run in runs:
                        child.train([run], print)
                seconds[way].append(time.perf_counter() - start)
                rates[way].append([read_meta(Path(cfg.out))["tokens_per_second"] for _, cfg in runs])
    mean = {way: sum(s) / len(s) for way, s in seconds.items()}
    for way, threads in ways.items():
        print(f"{way:<20} {threads} thread(s) each: both arms in {mean[way]:.0f} s (tokens/s of each: {rates[way]})")
    ratio = mean["one after the other"] / mean["side by side"]
    print(f"side by side: {ratio:.2f}x the speed of one after the other; load average {os.getloadavg()[0]:.1f}")
    write("bench_side_by_side", {"steps": args.steps, "batch_size": args.batch_size, "rounds": args.rounds,
                                 "threads": ways, "seconds": seconds, "tokens_per_second": rates, "ratio": ratio,
                                 "load": os.getloadavg()})  # fmt: skip


if __name__ == "__main__":
    main()
