"""An SFT step on a shared CPU: alone, beside one and beside two CPU-bound processes, under the old CPU policy
(torch's defaults) and the new one (``training.cpu``'s ``shared``), side by side in one run.

Each measurement is a fresh worker process (OpenMP reads its wait policy once, when torch loads) with
``OPENAGENT_CPU_POLICY`` set to the policy; the competitors are Python busy loops started before the
worker's timed steps and stopped after. The step is ``openagent train sft``'s (the packed shared-prefix
loss, AdamW through ``training.loop``), fp32, on a full fine-tune of:

- ``--model tiny`` (default): a random 4 × 256 Llama (about 1M parameters besides the embeddings) with the
  tiny tokenizer, whose byte-level tokens make episodes of a few thousand tokens: a CPU-bound step of
  about a second, many small parallel operations each (where spinning threads cost most);
- ``--model default``: the default base (SmolLM2-135M-Instruct) prepared under ``OPENAGENT_HOME``;
- or a Hugging Face model directory.

A step that costs in proportion to the CPU it gets keeps its CPU seconds per step as they are alone
(``cpu ×`` near 1) and slows down only by the share of the CPU the competitors take; a policy that
spins burns CPU while it waits (``cpu ×`` above 1) and slows down more.

    HF_HUB_OFFLINE=1 python benchmarks/bench_contention.py                        # about 5 minutes, quiet machine
    HF_HUB_OFFLINE=1 python benchmarks/bench_contention.py --steps 2 --rounds 1   # a check that it runs

writes ``benchmarks/results/contention.json`` (``contention-<model>.json`` for another model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

POLICIES = {"old": "torch", "new": "shared"}
BUSY_LOOP = "while True:\n    pass\n"


def worker(args: argparse.Namespace) -> None:
    """One measurement: the step's wall and CPU seconds, as a JSON line on stdout (run with the policy's env)."""
    from training import cpu

    use = cpu.configure(args.threads)  # before torch loads, as `openagent train` does
    from training.batches import collate, plan_batches
    from training.config import SFTConfig
    from training.dataset import build_examples
    from training.loop import Loop, load_model
    from training.sft import loss_module

    cfg = SFTConfig(
        out="", base=args.model, episodes=args.episodes, batch_size=args.batch_size, steps=args.steps + 1, lr=1e-4,
        lora=False, bf16=False, seed=args.seed,
    )  # fmt: skip
    model, tokenizer = load_model(cfg, Path(args.model))
    examples, _ = build_examples(cfg, tokenizer)
    plan = plan_batches(examples, cfg.batch_size, cfg.steps, cfg.seed)
    loop = Loop.prepare(cfg, model, loss_module(model), lambda s: 1.0, (0.9, 0.95), 0.0)
    loop.module.train()
    walls, cpus, tokens = [], [], []
    for step in range(cfg.steps):
        batch = collate([examples[i] for i in plan[step]]).to(loop.accelerator.device)
        wall, cpu_start = time.perf_counter(), time.process_time()
        loss = loop.module(batch.groups)
        loop.accelerator.backward(loss)
        loop.optimizer_step()
        if step:  # the first step warms up
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu_start)
            tokens.append(batch.tokens)
    print(json.dumps({"threads": use.threads, "wait": use.wait, "walls": walls, "cpus": cpus, "tokens": tokens}))


def measure(args: argparse.Namespace, policy: str, competitors: int) -> dict:
    """A worker's figures under ``policy`` beside ``competitors`` busy processes."""
    env = {**os.environ, "OPENAGENT_CPU_POLICY": POLICIES[policy], "PYTHONPATH": str(ROOT)}
    for key in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME", "OMP_NUM_THREADS"):  # the policy decides these
        env.pop(key, None)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(competitors)]
    try:
        argv = [sys.executable, __file__, "--worker", "--model", str(args.model), "--steps", str(args.steps),
                "--batch-size", str(args.batch_size), "--episodes", str(args.episodes), "--seed", str(args.seed),
                "--threads", str(args.threads)]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    if done.returncode != 0:
        raise SystemExit(f"the worker failed ({policy}, {competitors} competitors):\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "threads": figures["threads"], "wait": figures["wait"],
        "step_s": statistics.median(figures["walls"]), "cpu_s": statistics.median(figures["cpus"]),
        "steps": len(figures["walls"]), "tokens_per_step": statistics.mean(figures["tokens"]),
    }  # fmt: skip


def resolve_model(name: str, folder: Path) -> tuple[Path, str]:
    if name == "tiny":
        from training.tiny import build_tiny_model

        path = build_tiny_model(folder / "tiny", layers=4, hidden=256, heads=8, kv_heads=4)
        return path, "tiny random Llama, 4 layers × 256, tiny byte-level tokenizer"
    if name == "default":
        from training.inference.base import BASE_NAME, MARKER, default_base_dir

        path = default_base_dir()
        if not (path / MARKER).is_file():
            raise SystemExit(f"--model default: no prepared base in {path} (run `openagent base` first)")
        return path, BASE_NAME
    return Path(name), name


def table(results: dict) -> str:
    """Each policy and competitor count: seconds and CPU seconds per step and their ratios to the same policy alone."""
    header = f"{'policy':<12}{'busy':>5}{'threads':>8}{'s/step':>9}{'× alone':>9}{'cpu s':>8}{'cpu ×':>7}{'new/old':>9}"
    lines = [header]
    for name, by_count in results.items():
        alone = by_count["0"]
        for count, r in by_count.items():
            versus = results["old"][count]["step_s"]
            lines.append(
                f"{name + ' (' + POLICIES[name] + ')':<12}{count:>5}{r['threads']:>8}{r['step_s']:>9.3f}"
                f"{r['step_s'] / alone['step_s']:>9.2f}{r['cpu_s']:>8.3f}{r['cpu_s'] / alone['cpu_s']:>7.2f}"
                f"{r['step_s'] / versus:>9.2f}"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny (default), default (the prepared base), or a directory")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per measurement (after one warm-up step)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=16, help="training tasks the batches are drawn from")
    parser.add_argument("--competitors", default="0,1,2", help="busy processes beside the step, joined by commas")
    parser.add_argument("--rounds", type=int, default=2, help="measurements of each cell, interleaved; the median")
    parser.add_argument("--threads", type=int, default=0, help="torch threads for both policies (0: the policy's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    counts = [int(c) for c in args.competitors.split(",")]
    if 0 not in counts:
        counts.insert(0, 0)

    import torch
    from _common import write

    with tempfile.TemporaryDirectory() as tmp:
        args.model, described = resolve_model(args.model, Path(tmp))
        print(f"model: {described}; fp32, batch {args.batch_size}, {args.steps} timed steps, "
              f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)  # fmt: skip
        runs: dict[str, dict[str, list[dict]]] = {p: {str(c): [] for c in counts} for p in POLICIES}
        for round_ in range(args.rounds):
            for count in counts:
                for policy in POLICIES if round_ % 2 == 0 else reversed(POLICIES):  # alternate which goes first
                    r = measure(args, policy, count)
                    runs[policy][str(count)].append(r)
                    print(f"  round {round_ + 1}: {policy} beside {count}: {r['step_s']:.3f} s/step, "
                          f"cpu {r['cpu_s']:.3f} s", file=sys.stderr, flush=True)  # fmt: skip
    results = {
        p: {c: {**ms[0], "step_s": statistics.median(m["step_s"] for m in ms),
                "cpu_s": statistics.median(m["cpu_s"] for m in ms)} for c, ms in by_count.items()}
        for p, by_count in runs.items()
    }  # fmt: skip
    print(table(results))
    name = "contention" if described.startswith("tiny") else f"contention-{Path(str(args.model)).name}"
    write(
        name,
        {
            "machine": {"cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                        "platform": platform.platform(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "torch": torch.__version__, "load_average_after": os.getloadavg()},
            "setup": {"model": described, "dtype": "fp32", "lora": False, "batch_size": args.batch_size,
                      "steps": args.steps, "rounds": args.rounds, "competitors": "python busy loops"},
            "policies": POLICIES, "results": results, "runs": runs,
        },
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
