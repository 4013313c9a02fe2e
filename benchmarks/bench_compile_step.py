"""Does ``torch.compile`` pay for a decoding step here? A plain transformers forward pass of the default
base (its own cache, ``--batch`` rows of ``--context`` random tokens), eager steps, then compiled steps
(the first one includes the compilation), then eager again; prints ms a step and the load average.

    .venv/bin/python benchmarks/bench_compile_step.py [--batch 4] [--context 640] [--steps 8]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--context", type=int, default=640)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()

    importlib.import_module("training.inference")  # before torch: it sets OpenMP's wait policy
    import torch

    from training.inference import model_dir

    model, _, _ = model_dir.load(args.model, args.dtype)
    vocab = model.config.vocab_size

    def steps(forward, n: int) -> list[float]:
        with torch.inference_mode():
            cache = model(input_ids=torch.randint(0, vocab, (args.batch, args.context)), use_cache=True).past_key_values
            times = []
            for _ in range(n):
                start = time.perf_counter()
                forward(
                    input_ids=torch.randint(0, vocab, (args.batch, 1)), cache=cache, use_cache=True, logits_to_keep=1
                )
                times.append(1000 * (time.perf_counter() - start))
        return times

    print(f"{model.dtype}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}", flush=True)
    before = steps(model, args.steps)
    compiled = steps(torch.compile(model, dynamic=True), args.steps + 2)
    after = steps(model, args.steps)
    for name, times in (("eager", before), ("compiled", compiled), ("eager", after)):
        print(f"  {name:<9} ms a step: {' '.join(f'{t:.0f}' for t in times)}", flush=True)
    print(
        f"median eager {statistics.median(before[1:] + after[1:]):.0f} ms, compiled (from its 3rd step) "
        f"{statistics.median(compiled[2:]):.0f} ms; first compiled step {compiled[0] / 1000:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
