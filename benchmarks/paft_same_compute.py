"""PAFT against SFT of the same compute, paired on the same cases: PAFT trained from the base for as many
steps as the demo's SFT (its settings), both evaluated on tiers 1 and 2 of the held-out test split.

    HF_HUB_OFFLINE=1 python benchmarks/paft_same_compute.py --sft ~/.cache/pytest-openagent/demo/sft \\
        --alpha 0.5 --families symbolic,semantic --n 20

Writes ``benchmarks/results/paft-same-compute.json`` (the paired differences and both reports).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import write


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sft", required=True, help="the demo's finished SFT folder (its base and steps are reused)")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--families", default="symbolic,semantic")
    p.add_argument("--n", type=int, default=20, help="cases per tier")
    p.add_argument("--out", default="", help="PAFT output folder (default: beside --sft)")
    args = p.parse_args()

    from sandbox.evaluation.evaluate import evaluate
    from sandbox.evaluation.specs import load_agent
    from training import sft
    from training.config import SFTConfig
    from training.demo import paired

    meta = json.loads((Path(args.sft) / "openagent-train.json").read_text())
    config = meta["config"]
    families = args.families.split(",")
    out = args.out or str(Path(args.sft).parent / f"paft-{config['steps']}-{'+'.join(families)}-a{args.alpha}")
    keep = ("base", "steps", "batch_size", "episodes", "lr", "warmup", "seed", "lora_layers")
    start = time.perf_counter()
    sft.train(SFTConfig(out=out, alpha=args.alpha, families=families, save_every=2, **{k: config[k] for k in keep}))
    result: dict = {"sft": args.sft, "paft": out, "alpha": args.alpha, "families": families, "n": args.n,
                    "train_s": round(time.perf_counter() - start, 1)}  # fmt: skip
    reports = {}
    for label, path in (("sft", args.sft), ("paft", out)):
        start = time.perf_counter()
        reports[label] = evaluate(
            load_agent(f"hf:{path}"), ["perception", "interaction"], n=args.n, seed=0, domain="poi", split="test",
            batch_size=32, cache_dir=Path(out).parent / "eval-cache",
        )  # fmt: skip
        result[f"eval_{label}_s"] = round(time.perf_counter() - start, 1)
    result["paft_minus_sft"] = {k: str(v) for k, v in paired(reports["paft"], reports["sft"]).items()}
    result["reports"] = {k: r.to_dict() for k, r in reports.items()}
    print(result["paft_minus_sft"])
    write("paft-same-compute", result)


if __name__ == "__main__":
    main()
