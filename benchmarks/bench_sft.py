"""SFT throughput: ``training.sft`` against TRL's ``SFTTrainer``, same model, data and machine.

Both fine-tune the default base (SmolLM2-135M-Instruct) with LoRA r=16 on all linear layers, on
the same pre-tokenized gold trajectories (the checkpoint's chat template, loss on assistant tokens
only), the same batch size, in fp32 (bf16 autocast only where the CPU has native bf16) and run
the same number of steps. Throughput is tokens of the episodes (padding excluded) per second of
training steps, the first step left out as warm-up. TRL needs ``pip install trl==1.16 datasets``.

    HF_HUB_OFFLINE=1 python benchmarks/bench_sft.py --batch-size 4 --steps 4

writes ``benchmarks/results/sft.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results" / "sft.json"


def peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)


def steady_rate(times: list[float], tokens: list[int]) -> float:
    """Tokens per second over steps 2..N (``times`` are cumulative seconds at the end of each step)."""
    if len(times) < 2:
        return tokens[0] / times[0]
    return sum(tokens[1:]) / (times[-1] - times[0])


def run_ours(args, base, examples) -> dict:
    from training.config import SFTConfig
    from training.runs import META_FILE
    from training.sft import train

    with tempfile.TemporaryDirectory() as out:
        cfg = SFTConfig(
            out=out, base=str(base), steps=args.steps, batch_size=args.batch_size, lr=1e-3, warmup=1,
            save_every=0, progress=False, share_prefix=not args.no_share,
        )  # fmt: skip
        t = time.perf_counter()
        train(cfg, examples, {"benchmark": True})
        wall = time.perf_counter() - t
        meta = json.loads((Path(out) / META_FILE).read_text())
    hist = meta["history"]
    return {
        "tokens_per_second": round(steady_rate([h["seconds"] for h in hist], [h["tokens"] for h in hist]), 1),
        "step_seconds": [h["seconds"] for h in hist],
        "losses": [h["loss"] for h in hist],
        "wall_seconds_with_load_and_save": round(wall, 1),
    }


def run_trl(args, base, examples) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    # Pre-tokenized with the same ids; TRL turns an "assistant_masks" column into labels itself
    # (its assistant_only_loss flag only applies to conversational data it tokenizes).
    data = Dataset.from_dict(
        {"input_ids": [e.ids for e in examples], "assistant_masks": [[int(m) for m in e.labels] for e in examples]}
    )
    marks: list[float] = []

    class Clock(TrainerCallback):
        def on_train_begin(self, *a, **k):
            marks.append(time.perf_counter())

        def on_step_end(self, *a, **k):
            marks.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as out:
        cfg = TRLConfig(
            output_dir=out, per_device_train_batch_size=args.batch_size, max_steps=args.steps, learning_rate=1e-3,
            lr_scheduler_type="cosine", warmup_steps=1, logging_steps=1, save_strategy="no", report_to=[],
            use_cpu=True, bf16=False, max_length=None, dataloader_num_workers=0,
            seed=0, data_seed=0,
        )  # fmt: skip
        lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
        trainer = SFTTrainer(model=model, args=cfg, train_dataset=data, processing_class=tokenizer, peft_config=lora)
        trainer.add_callback(Clock())
        # Count the tokens of the batches TRL really draws (its sampler's order), padding excluded.
        seen: list[int] = []
        collator = trainer.data_collator

        def counting(features):
            seen.append(sum(len(f["input_ids"]) for f in features))
            return collator(features)

        trainer.data_collator = counting
        t = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    times = [m - marks[0] for m in marks[1:]]
    return {
        "tokens_per_second": round(steady_rate(times, seen[: len(times)]), 1),
        "step_seconds": [round(x, 2) for x in times],
        "losses": losses,
        "wall_seconds_with_load_and_save": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--only", choices=["ours", "trl"], default=None)
    parser.add_argument("--no-share", action="store_true", help="ours without the shared prefix (an ablation)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from training.batches import plan_batches
    from training.config import SFTConfig
    from training.dataset import build_examples
    from training.sft import resolve_base

    base = resolve_base("default")
    tokenizer = AutoTokenizer.from_pretrained(base)
    examples, _ = build_examples(SFTConfig(episodes=args.episodes), tokenizer)
    # The same episodes for both, in the order ours draws them; TRL shuffles within them.
    order = [i for batch in plan_batches(examples, args.batch_size, args.steps, 0) for i in batch]
    examples = [examples[i] for i in order]
    previous = json.loads(Path(args.out).read_text()) if args.only and Path(args.out).is_file() else {}
    result = {
        **previous,
        "machine": {"cpu_threads": torch.get_num_threads(), "platform": platform.platform(),
                    "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__},
        "setup": {"model": "SmolLM2-135M-Instruct", "lora": "r=16 all-linear", "dtype": "fp32",
                  "batch_size": args.batch_size, "steps": args.steps, "episodes": len(examples),
                  "mean_tokens_per_episode": round(sum(map(len, examples)) / len(examples), 1),
                  "mean_label_tokens_per_episode": round(sum(sum(e.labels) for e in examples) / len(examples), 1)},
    }  # fmt: skip
    if args.only in (None, "ours"):
        print("ours ...", file=sys.stderr, flush=True)
        result["ours"] = run_ours(args, base, examples)
        result["ours"]["peak_rss_gb"] = peak_rss_gb()
        result["ours"]["load_average_after"] = os.getloadavg()  # other processes share these cores
        print(json.dumps(result["ours"]), file=sys.stderr, flush=True)
    if args.only in (None, "trl"):
        import trl

        print("TRL ...", file=sys.stderr, flush=True)
        result["trl"] = run_trl(args, base, examples)
        result["trl"]["version"] = trl.__version__
        result["trl"]["peak_rss_gb_process"] = peak_rss_gb()
        result["trl"]["load_average_after"] = os.getloadavg()
        print(json.dumps(result["trl"]), file=sys.stderr, flush=True)
    if "ours" in result and "trl" in result:
        result["speedup"] = round(result["ours"]["tokens_per_second"] / result["trl"]["tokens_per_second"], 2)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in result if k != "machine"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
