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
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
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
    from training.demo import DemoConfig, checked
    from training.demo_clock import probe_pace
    from training.demo_loop import expected_seconds
    from training.demo_run import loop_plan, loop_settings
    from training.sft import resolve_base

    figures: dict = {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_computes_bf16": precision.cpu_computes_bf16(),
    }
    for name, quick in (("default", False), ("quick", True)):
        cfg = checked(DemoConfig(quick=quick))
        plan = loop_plan(cfg)
        settings = loop_settings(cfg, plan)
        base = str(resolve_base(cfg.base))
        pace, _ = probe_pace(SFTConfig(out="", base=base, **settings), lambda _: None)
        phases = expected_seconds(plan, pace)
        figures[name] = {"step_s": round(pace.train_step_s, 2), "plan_min": round(sum(phases.values()) / 60, 1)}
    (*_, fp32, bf16), *_ = precision.measured()
    figures["fp32_tok_s"] = round(precision.PROBE_TOKENS / fp32)
    figures["bf16_tok_s"] = round(precision.PROBE_TOKENS / bf16)  # 0: not timed (the CPU computes no bf16)
    figures["chosen"] = "bf16" if bf16 < precision.MARGIN * fp32 else "fp32"  # training.precision.choose's rule
    return figures


def sft_rates(steps: int, precisions: list[str]) -> dict:
    """Tokens per second of ``steps`` real SFT steps of the default demo's data, the first left out as warm-up: in
    the precision the run chooses (``auto``) and in ``fp32``, each a run of its own."""
    from bench_sft import steady_rate

    from training.config import SFTConfig
    from training.demo import DemoConfig, checked
    from training.demo_run import loop_plan, loop_settings
    from training.runs import META_FILE
    from training.sft import resolve_base, train

    cfg = checked(DemoConfig())
    plan = loop_plan(cfg)
    settings = loop_settings(cfg, plan)
    rates = {}
    for name in precisions:
        with tempfile.TemporaryDirectory() as out:
            run = SFTConfig(**{**settings, "out": out, "base": str(resolve_base(cfg.base)), "steps": steps,
                               "save_every": 0, "progress": False, "bf16": name == "auto"})  # fmt: skip
            train(run)
            meta = json.loads((Path(out) / META_FILE).read_text())
        history = meta["history"]
        rate = steady_rate([h["seconds"] for h in history], [h["tokens"] for h in history])
        rates[name] = {"tok_s": round(rate), "bf16": meta["segments"][0]["bf16"]}
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4, help="real SFT steps a run (0: the probe alone)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figures = probe()
        if args.steps:
            figures["sft"] = sft_rates(args.steps, ["auto", "fp32"] if figures["chosen"] == "bf16" else ["auto"])
        print(json.dumps(figures))
        return

    runs: dict[str, list[dict]] = {name: [] for name in PROFILES}
    for r in range(args.rounds):
        for name, limits in PROFILES.items():
            done = subprocess.run(
                [sys.executable, __file__, "--child", "--steps", str(args.steps)], env={**os.environ, **limits},
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}: {name}: {runs[name][-1]}", flush=True)

    def median(name: str, *path: str) -> float | None:
        values = []
        for run in runs[name]:
            for key in path:
                run = run.get(key) if isinstance(run, dict) else None
            values.append(run)
        return None if None in values else statistics.median(values)

    def probe_rate(run: dict) -> float:
        return run[f"{run['chosen']}_tok_s"]

    def sft_rate(run: dict) -> float:
        return run["sft"]["auto"]["tok_s"] if "sft" in run else math.nan

    def vs_native(name: str, rate: Callable[[dict], float]) -> float:
        return round(statistics.median(rate(a) / rate(n) for a, n in zip(runs[name], runs["native"], strict=True)), 2)

    summary = {}
    print(f"\n{'profile':20} {'probe fp32':>10} {'probe bf16':>10} {'chosen':>6} {'× native':>8} {'SFT tok/s':>9} "
          f"{'SFT fp32':>8} {'× native':>8} {'default plan':>12} {'quick plan':>10}")  # fmt: skip
    for name in PROFILES:
        summary[name] = f = {
            "limits": PROFILES[name], "capability": runs[name][0]["capability"],
            "probe_fp32_tok_s": median(name, "fp32_tok_s"), "probe_bf16_tok_s": median(name, "bf16_tok_s"),
            "chosen": "/".join(sorted({run["chosen"] for run in runs[name]})),
            "probe_vs_native": vs_native(name, probe_rate), "sft_tok_s": median(name, "sft", "auto", "tok_s"),
            "sft_fp32_tok_s": median(name, "sft", "fp32", "tok_s"), "sft_vs_native": vs_native(name, sft_rate),
            "default_plan_min": median(name, "default", "plan_min"),
            "quick_plan_min": median(name, "quick", "plan_min"),
        }  # fmt: skip
        rates = {k: "-" if f[k] is None else f"{f[k]:.0f}" for k in f if k.endswith("tok_s")}
        print(f"{name:20} {rates['probe_fp32_tok_s']:>10} {rates['probe_bf16_tok_s']:>10} {f['chosen']:>6} "
              f"{f['probe_vs_native']:>7.2f}× {rates['sft_tok_s']:>9} {rates['sft_fp32_tok_s']:>8} "
              f"{f['sft_vs_native']:>7.2f}× {f['default_plan_min']:>8.1f} min "
              f"{f['quick_plan_min']:>6.1f} min")  # fmt: skip
    print("(medians of the rounds; × native: against native's rate in the same round, in the precision each chose; "
          "SFT fp32: the same steps in fp32 where bf16 was chosen)")  # fmt: skip
    write("isa", {"cpu": cpu_name(), "rounds": args.rounds, "profiles": summary,
                  "runs": runs})  # fmt: skip


if __name__ == "__main__":
    main()
