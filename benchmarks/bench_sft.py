"""SFT throughput: ``training.sft`` against TRL's ``SFTTrainer`` on the same exported data, side by side.

One run exports the SFT data as chat JSONL (``openagent data export``'s function), then fine-tunes the
same model on that file twice: with our trainer (the rows tokenized through the checkpoint's chat
template, as ``openagent train`` does) and with TRL's ``SFTTrainer`` (``load_dataset("json")``, TRL
tokenizing the conversations itself with ``assistant_only_loss=True``). Same model, LoRA r=16 on all
linear layers (or a full fine-tune of the tiny model), fp32 for both, same batch size, same steps, whole
episodes (none truncated: rows longer than ``--max-length`` tokens are left out of the file both read).
Throughput is the episodes' tokens (padding excluded) per second of training steps, the first step left
out as warm-up. Needs ``trl`` and ``datasets`` (the dev extra).

    HF_HUB_OFFLINE=1 python benchmarks/bench_sft.py --model default --batch-size 4 --steps 6
    HF_HUB_OFFLINE=1 python benchmarks/bench_sft.py --model tiny --steps 20     # seconds, plumbing only

writes ``benchmarks/results/sft.json`` (``sft-tiny.json`` for the tiny model).
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

from _common import write


def peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)


def steady_rate(times: list[float], tokens: list[int]) -> float:
    """Tokens per second over steps 2..N (``times`` are cumulative seconds at the end of each step)."""
    if len(times) < 2:
        return tokens[0] / times[0]
    return sum(tokens[1:]) / (times[-1] - times[0])


def export_data(args: argparse.Namespace, tokenizer, folder: Path) -> tuple[Path, list]:
    """The SFT data as JSONL (rows over ``--max-length`` tokens left out) and our examples of the same rows."""
    from training.batches import Example
    from training.config import SFTConfig
    from training.dataset import build_trajectories, encode
    from training.export import chat_row, write_jsonl

    trajectories, _ = build_trajectories(SFTConfig(episodes=args.episodes, seed=args.seed))
    rows, examples = [], []
    for t in trajectories:
        row = chat_row(t)
        ids, mask = encode(tokenizer, row["messages"], row["tools"])
        if len(ids) <= args.max_length:
            rows.append(row)
            examples.append(Example(ids, mask, t.perturbations, t.family))
    path = folder / "sft.jsonl"
    write_jsonl(rows, path)
    return path, examples


def run_ours(args: argparse.Namespace, base: Path, examples: list, lora_layers: int = 0) -> dict:
    from training.config import SFTConfig
    from training.runs import META_FILE
    from training.sft import train

    with tempfile.TemporaryDirectory() as out:
        cfg = SFTConfig(
            out=out, base=str(base), steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup=1,
            save_every=0, progress=False, share_prefix=not args.no_share, lora=args.lora, bf16=False,
            max_length=args.max_length, seed=args.seed, lora_layers=lora_layers,
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


def run_trl(args: argparse.Namespace, base: Path, data_file: Path) -> dict:
    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    data = load_dataset("json", data_files=str(data_file), split="train")
    marks: list[float] = []

    class Clock(TrainerCallback):
        def on_train_begin(self, *a, **k):
            marks.append(time.perf_counter())

        def on_step_end(self, *a, **k):
            marks.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as out:
        cfg = TRLConfig(
            output_dir=out, per_device_train_batch_size=args.batch_size, max_steps=args.steps, learning_rate=args.lr,
            lr_scheduler_type="cosine", warmup_steps=1, logging_steps=1, save_strategy="no", report_to=[],
            use_cpu=True, bf16=False, assistant_only_loss=True, max_length=None, dataloader_num_workers=0,
            seed=args.seed, data_seed=args.seed,
        )  # fmt: skip
        lora = (
            LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
            if args.lora
            else None
        )
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


def resolve_model(name: str, folder: Path) -> Path:
    if name == "tiny":
        from training.tiny import build_tiny_model

        return build_tiny_model(folder / "tiny")
    from training.sft import resolve_base

    return resolve_base(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default", help="'default' (SmolLM2-135M-Instruct), 'tiny', or a directory")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--no-share", action="store_true", help="ours without the shared prefix (an ablation)")
    parser.add_argument(
        "--lora-layers", type=int, default=0, help="also ours with LoRA on the last N layers only (the demo's lever)"
    )
    args = parser.parse_args()
    args.lora = args.model != "tiny"

    import torch
    import trl
    from transformers import AutoTokenizer

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        base = resolve_model(args.model, Path(tmp))
        data_file, examples = export_data(args, AutoTokenizer.from_pretrained(base), Path(tmp))
        result = {
            "machine": {"cpu_threads": torch.get_num_threads(), "platform": platform.platform(),
                        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
                        "trl": trl.__version__, "load_average_before": os.getloadavg()},
            "setup": {"model": args.model, "lora": "r=16 all-linear" if args.lora else "full fine-tune",
                      "dtype": "fp32", "batch_size": args.batch_size, "steps": args.steps, "rows": len(examples),
                      "mean_tokens_per_row": round(sum(map(len, examples)) / len(examples), 1),
                      "mean_label_tokens_per_row": round(sum(sum(e.labels) for e in examples) / len(examples), 1)},
        }  # fmt: skip
        print("ours ...", file=sys.stderr, flush=True)
        result["ours"] = {**run_ours(args, base, examples), "load_average_after": os.getloadavg()}
        print(json.dumps(result["ours"]), file=sys.stderr, flush=True)
        if args.lora and args.lora_layers:
            print(f"ours, LoRA on the last {args.lora_layers} layers ...", file=sys.stderr, flush=True)
            last = run_ours(args, base, examples, args.lora_layers)
            last.update(lora_layers=args.lora_layers, load_average_after=os.getloadavg())
            result["ours_last_layers"] = last
            print(json.dumps(result["ours_last_layers"]), file=sys.stderr, flush=True)
        print("TRL ...", file=sys.stderr, flush=True)
        result["trl"] = {**run_trl(args, base, data_file), "load_average_after": os.getloadavg()}
        print(json.dumps(result["trl"]), file=sys.stderr, flush=True)
    result["peak_rss_gb_process"] = peak_rss_gb()
    result["speedup"] = round(result["ours"]["tokens_per_second"] / result["trl"]["tokens_per_second"], 2)
    print(json.dumps({k: result[k] for k in ("setup", "speedup")}, indent=1))
    print(f"ours {result['ours']['tokens_per_second']} tok/s, TRL {result['trl']['tokens_per_second']} tok/s")
    if "ours_last_layers" in result:
        last = result["ours_last_layers"]["tokens_per_second"]
        result["last_layers_speedup_over_all"] = round(last / result["ours"]["tokens_per_second"], 2)
        print(f"ours with LoRA on the last {args.lora_layers} layers {last} tok/s "
              f"({result['last_layers_speedup_over_all']}x all layers)")  # fmt: skip
    write("sft" if args.model == "default" else f"sft-{Path(args.model).name}", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
