"""Where a decoding step of the model agent spends its time: one batch of scripted POI episodes' first
turns (system prompt, tool specs, query) through ``BatchGenerator``, once to warm up, once timed, once
under torch's profiler; prints ms a step, CPU seconds, the profiler's table by self time, and the
weights-read bound (the bytes of weights a step reads / the memory read rate measured here).

    .venv/bin/python benchmarks/profile_decode_step.py [--batch 4] [--threads 1] [--max-new-tokens 24]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def read_rate_gb_s(torch) -> float:
    """Bytes a second one pass of ``sum`` reads from a 1 GiB tensor (well past the caches)."""
    x = torch.ones(256 * 1024 * 1024)
    x.sum()
    start = time.perf_counter()
    for _ in range(3):
        x.sum()
    return 3 * x.numel() * x.element_size() / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--rows", type=int, default=22, help="rows of the profiler's table")
    args = parser.parse_args()

    importlib.import_module("training.inference")  # before torch: it sets OpenMP's wait policy
    import torch
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_model_agent import scripted_episodes

    from sandbox.agent import Turn
    from training.inference.generation import Sampling
    from training.inference.model_agent import HFAgent

    if args.threads:
        torch.set_num_threads(args.threads)
    agent = HFAgent(args.model, dtype=args.dtype)
    gen, sampling = agent.generator, Sampling(max_new_tokens=args.max_new_tokens)
    prompts = [agent.render(Turn(e["id"], e["messages"], e["tools"])) for e in scripted_episodes("poi", args.batch, 0)]
    gen.generate(prompts, [None] * len(prompts), sampling)
    cpu, wall = time.process_time(), time.perf_counter()
    gen.generate(prompts, [None] * len(prompts), sampling)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    t = gen.timings
    step_ms = 1000 * t["decode_s"] / max(1, t["decode_steps"])
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        gen.generate(prompts, [None] * len(prompts), sampling)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))

    # Every matrix is read whole once a step but the input embedding, of which a few rows are looked up
    # (unless tied to the output head, which reads it whole).
    embedding = agent.model.get_input_embeddings().weight
    read = sum(p.numel() * p.element_size() for p in agent.model.parameters())
    if embedding is not agent.model.get_output_embeddings().weight:
        read -= embedding.numel() * embedding.element_size()
    rate = read_rate_gb_s(torch)
    print(
        f"{gen.dtype}, {torch.get_num_threads()} threads, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
        f"batch {len(prompts)}, prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens, load average "
        f"{os.getloadavg()[0]:.1f}\n  {t['decode_steps']} decoding steps: {step_ms:.1f} ms a step; prefill "
        f"{t['prefill_s']:.2f} s; whole call {wall:.2f} s wall, {cpu:.2f} s CPU\n  weights read a step "
        f"{read / 1e6:.0f} MB at {rate:.1f} GB/s: {1000 * read / rate / 1e9:.0f} ms, the bound"
    )


if __name__ == "__main__":
    main()
