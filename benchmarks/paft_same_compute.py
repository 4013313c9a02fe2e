"""PAFT against SFT of the same compute, paired on the same cases: from one start (the base, or an SFT
checkpoint as in the paper), SFT (α=0) and PAFT (α, the families given) trained for the same steps with the
demo's settings, both evaluated on the tiers given (1 and 2 by default) of the held-out test split and their clean
twins; a finished arm is reused, so other tiers or another evaluation seed cost only the evaluation.

    HF_HUB_OFFLINE=1 python benchmarks/paft_same_compute.py --start ~/.cache/pytest-openagent/demo/sft \\
        --steps 10 --alpha 0.5 --families symbolic,semantic --n 20 --dir /tmp/paft

Writes ``benchmarks/results/paft-same-compute.json`` (``--out``: the paired differences, tier-4 refusals among
them, and both reports).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import write


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", default="default", help="the base ('default') or a checkpoint folder")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--families", default="symbolic,semantic")
    p.add_argument("--perturbations", default="", help="perturbation names, joined by commas (instead of families)")
    p.add_argument("--n", type=int, default=20, help="cases per tier")
    p.add_argument("--dir", required=True, help="folder for both runs and the episode cache")
    p.add_argument("--tiers", default="perception,interaction", help="tiers to evaluate, joined by commas")
    p.add_argument("--seed", type=int, default=0, help="seed of the evaluation cases (training's is the demo's)")
    p.add_argument("--out", default="paft-same-compute", help="name of the JSON in benchmarks/results")
    args = p.parse_args()

    from sandbox.evaluation.evaluate import evaluate
    from sandbox.evaluation.specs import load_agent
    from training import sft
    from training.config import SFTConfig
    from training.demo import DemoConfig, train_settings
    from training.paired import paired

    families = args.families.split(",")
    names = [n for n in args.perturbations.split(",") if n]
    data = "+".join(names or families)
    common = dict(base=args.start, steps=args.steps, **train_settings(DemoConfig()))
    arms = {
        "sft": SFTConfig(out=str(Path(args.dir) / f"sft-{args.steps}"), **common),
        "paft": SFTConfig(
            out=str(Path(args.dir) / f"paft-{args.steps}-{data}-a{args.alpha}"), alpha=args.alpha,
            families=families, perturbations=names, **common,
        ),
    }  # fmt: skip
    tiers = args.tiers.split(",")
    result: dict = {"start": args.start, "steps": args.steps, "alpha": args.alpha, "families": families,
                    "perturbations": names, "n": args.n, "tiers": tiers, "eval_seed": args.seed}  # fmt: skip
    reports = {}
    for label, cfg in arms.items():
        start = time.perf_counter()
        sft.train(cfg)
        result[f"train_{label}_s"] = round(time.perf_counter() - start, 1)
        start = time.perf_counter()
        reports[label] = evaluate(
            load_agent(f"hf:{cfg.out}"), tiers, n=args.n, seed=args.seed, domain="poi",
            split="test", batch_size=32, cache_dir=Path(args.dir) / "eval-cache",
        )  # fmt: skip
        result[f"eval_{label}_s"] = round(time.perf_counter() - start, 1)
        rows = [row for row in reports[label].to_dict()["rows"] if row["kind"] in ("clean", "tier")]
        result[label] = {row["scope"]: f"{row['success']['k']}/{row['success']['n']}" for row in rows}
        tier4 = next((row for row in rows if row["scope"] == "internalization"), None)
        if tier4 is not None:
            result[label]["tier-4 refusal"] = f"{tier4['refusal']['k']}/{tier4['refusal']['n']}"
        print(label, result[label], flush=True)
    result["paft_minus_sft"] = {k: str(v) for k, v in paired(reports["paft"], reports["sft"]).items()}
    result["reports"] = {k: r.to_dict() for k, r in reports.items()}
    print(result["paft_minus_sft"])
    write(args.out, result)


if __name__ == "__main__":
    main()
