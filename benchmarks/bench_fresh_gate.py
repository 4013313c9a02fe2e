"""The demo's gate sessions on a fresh sample (its fixed measurement, no property tests) for several checkpoints, one
after the other with the threads each session chooses, against side by side with a thread each
(``training.demo_gate.run_sessions``), taken in turns.

    python benchmarks/bench_fresh_gate.py --gate ~/.cache/openagent/loop/gate \\
        --agents hf:~/.cache/openagent/loop/sft,hf:~/.cache/openagent/loop/sft-continued --seed 1

Each way measures into a fresh episode cache. Prints each way's wall seconds for all the sessions and the ratio,
and checks that both ways scored every case alike; writes ``benchmarks/results/bench_fresh_gate.json``.
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


def outcomes(report: Path) -> list[str]:
    import json

    return [r["outcome"] for r in json.loads(report.read_text())["records"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gate", required=True, help="the demo's gate folder (its suite and pyproject.toml)")
    parser.add_argument("--agents", required=True, help="comma-separated agents (hf:CHECKPOINT, ...)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from training import cpu, demo_gate

    agents = [os.path.expanduser(a) for a in args.agents.split(",")]
    cpus = cpu.available_cpus()
    ways = {"one after the other": 0, "side by side": max(1, cpus // len(agents))}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    scored: dict[str, list[list[str]]] = {}
    for _ in range(args.rounds):
        for way, threads in ways.items():
            with tempfile.TemporaryDirectory() as folder:
                sessions = [(f"agent{i}", agent, Path(folder) / f"{i}.json") for i, agent in enumerate(agents)]
                cache = Path(folder) / "cache"
                start = time.perf_counter()
                if way == "side by side":
                    ended = demo_gate.run_sessions(Path(args.gate), sessions, args.seed, cache, print, print,
                                                   search=False, threads=threads)  # fmt: skip
                    codes = [e.code for e in ended]
                else:
                    codes = [demo_gate.run_session(Path(args.gate), agent, report, args.seed, cache, print, print,
                                                   search=False) for _, agent, report in sessions]  # fmt: skip
                seconds[way].append(time.perf_counter() - start)
                if not all(report.is_file() for _, _, report in sessions):
                    raise SystemExit(f"{way}: a session wrote no report (exit codes {codes})")
                scored[way] = [outcomes(report) for _, _, report in sessions]
    mean = {way: sum(s) / len(s) for way, s in seconds.items()}
    for way, threads in ways.items():
        print(f"{way:<20} {threads or 'own choice of'} thread(s) each: {len(agents)} sessions in {mean[way]:.0f} s")
    import resource

    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB on Linux
    print(f"the largest session's peak memory: {peak:.1f} GiB")
    ratio = mean["one after the other"] / mean["side by side"]
    same = scored["one after the other"] == scored["side by side"]
    print(f"side by side: {ratio:.2f}x the speed of one after the other; the same outcomes: {same}; "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    write("bench_fresh_gate", {"agents": agents, "seed": args.seed, "rounds": args.rounds, "threads": ways,
                               "seconds": seconds, "ratio": ratio, "peak_gib": peak, "same_outcomes": same,
                               "load": os.getloadavg()})  # fmt: skip


if __name__ == "__main__":
    main()
