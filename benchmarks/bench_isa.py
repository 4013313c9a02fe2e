"""The demo's probe and plan on this CPU limited to the instruction sets of the CPUs users have, side by side.

``openagent demo`` times a training pass of the base in fp32 and bf16 (``training.precision``), trains in the
faster, and plans its phases from that rate (``training.demo_loop.expected_seconds``). A machine without AMX
(an AMD EPYC with AVX512-BF16) or with AVX2 only gets another rate and may choose the other precision. On an x86
CPU that has them all, the libraries can be told to use no more than a given instruction set: oneDNN (bf16
matrix products) by ``ONEDNN_MAX_CPU_ISA``, MKL (fp32 ones) by ``MKL_ENABLE_INSTRUCTIONS``, ATen's own kernels
by ``ATEN_CPU_CAPABILITY``. Each profile runs in a process of its own (the libraries read them at load), the
profiles in turns, ``--rounds`` times, so that each round compares them at the same moment of a noisy machine.

This limits the instructions, not the machine: the clock, the caches and the memory stay this CPU's, so a
profile's figure is this CPU without AMX (or AVX-512), not an EPYC. Run ``openagent demo`` itself with a
profile's variables to time the whole demo so limited.

    HF_HUB_OFFLINE=1 python benchmarks/bench_isa.py --rounds 3

writes ``benchmarks/results/isa.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write

from training.demo_clock import cpu_name

PROFILES: dict[str, dict[str, str]] = {
    "native": {},
    "avx512-bf16, no AMX": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
}


def probe() -> dict:
    """In this process (limited by its environment): the demo's probe, and its plan for the default and --quick."""
    from training.cli import prepare_process

    prepare_process()  # the demo's process: OpenMP's wait policy and malloc's, before torch loads
    from training import cpu, precision

    cpu.configure()
    import torch

    from training.config import SFTConfig
    from training.demo import DemoConfig, checked, train_settings
    from training.demo_clock import probe_step_seconds
    from training.demo_loop import expected_seconds
    from training.demo_run import loop_plan
    from training.sft import resolve_base

    figures: dict = {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_computes_bf16": precision.cpu_computes_bf16(),
    }
    for name, quick in (("default", False), ("quick", True)):
        cfg = checked(DemoConfig(quick=quick))
        plan = loop_plan(cfg)
        settings = {**train_settings(cfg), "episodes": plan.episodes, "task_families": list(plan.families)}
        base = str(resolve_base(cfg.base))
        step_s, _ = probe_step_seconds(SFTConfig(out="", base=base, **settings), lambda _: None)
        phases = expected_seconds(plan, step_s)
        figures[name] = {"step_s": round(step_s, 2), "plan_min": round(sum(phases.values()) / 60, 1)}
    (*_, fp32, bf16), *_ = precision.measured()
    figures["fp32_tok_s"] = round(precision.PROBE_TOKENS / fp32)
    figures["bf16_tok_s"] = round(precision.PROBE_TOKENS / bf16)  # 0: not timed (the CPU computes no bf16)
    figures["chosen"] = "bf16" if bf16 < precision.MARGIN * fp32 else "fp32"  # training.precision.choose's rule
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(probe()))
        return

    runs: dict[str, list[dict]] = {name: [] for name in PROFILES}
    for r in range(args.rounds):
        for name, limits in PROFILES.items():
            done = subprocess.run(
                [sys.executable, __file__, "--child"], env={**os.environ, **limits},
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}: {name}: {runs[name][-1]}", flush=True)

    def median(name: str, *path: str) -> float:
        values = []
        for run in runs[name]:
            for key in path:
                run = run[key]
            values.append(run)
        return statistics.median(values)

    def chosen_rate(run: dict) -> int:
        return run[f"{run['chosen']}_tok_s"]

    native = [chosen_rate(run) for run in runs["native"]]
    summary = {}
    print(f"\n{'profile':22} {'fp32 tok/s':>10} {'bf16 tok/s':>10} {'chosen':>7} {'× native':>9} "
          f"{'default plan':>13} {'--quick plan':>13}")  # fmt: skip
    for name in PROFILES:
        ratio = statistics.median(chosen_rate(run) / n for run, n in zip(runs[name], native, strict=True))
        chosen = {run["chosen"] for run in runs[name]}
        summary[name] = {
            "limits": PROFILES[name], "capability": runs[name][0]["capability"],
            "fp32_tok_s": median(name, "fp32_tok_s"), "bf16_tok_s": median(name, "bf16_tok_s"),
            "chosen": "/".join(sorted(chosen)), "rate_vs_native": round(ratio, 2),
            "default_plan_min": median(name, "default", "plan_min"),
            "quick_plan_min": median(name, "quick", "plan_min"),
        }  # fmt: skip
        s = summary[name]
        print(f"{name:22} {s['fp32_tok_s']:>10.0f} {s['bf16_tok_s']:>10.0f} {s['chosen']:>7} {ratio:>8.2f}× "
              f"{s['default_plan_min']:>9.1f} min {s['quick_plan_min']:>9.1f} min")  # fmt: skip
    print("(medians of the rounds; × native: the chosen precision's rate against native's in the same round)")
    write("isa", {"cpu": cpu_name(), "rounds": args.rounds, "profiles": summary,
                  "runs": runs})  # fmt: skip


if __name__ == "__main__":
    main()
