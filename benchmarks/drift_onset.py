"""Success under drift (onset >= 1) against the same perturbations from the first turn (onset 0), paired per tier.

The fixed sample's drift cases (``draw_cases(..., drift=True)``: ``--n`` per tier of the perturbations that can
drift, each with a drawn onset) are run beside their static twins (the same specs with ``after=0``), through one
episode cache; the difference is paired case by case, with Newcombe's interval.

    HF_HUB_OFFLINE=1 OPENAGENT_HOME=/work/oa_home python benchmarks/drift_onset.py hf:/work/ckpt/sft --n 30

Writes ``benchmarks/results/drift-onset.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import write


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("agent", help="agent spec: hf:PATH, oracle, static, openai:MODEL@URL, module:callable")
    p.add_argument("--n", type=int, default=30, help="drift cases per tier (default 30)")
    p.add_argument("--tiers", default="perception,interaction,internalization", help="tiers, joined by commas")
    p.add_argument("--seed", type=int, default=0, help="seed of the drawn cases (default 0)")
    p.add_argument("--domain", default="poi", help="domain of the tasks (default poi)")
    p.add_argument("--batch-size", type=int, default=32, help="episodes per agent batch (default 32)")
    p.add_argument("--cache-dir", default=".openagent_cache", help="episode cache folder (default .openagent_cache)")
    p.add_argument("--out", default="drift-onset", help="name of the JSON in benchmarks/results")
    args = p.parse_args()

    from sandbox.evaluation.cache import EPISODES, EpisodeCache, prepare
    from sandbox.evaluation.draw import draw_cases
    from sandbox.evaluation.specs import load_agent
    from sandbox.metrics import PairedDelta
    from sandbox.perturbations import TIERS

    tiers = args.tiers.split(",")
    drawn = draw_cases(tiers, args.n, args.seed, args.domain, drift=True)
    drift = [c for c in drawn if any(p.after for p in c.perturbations)]
    static = [c.static() for c in drift]
    agent = load_agent(args.agent)
    cache = EpisodeCache(prepare(Path(args.cache_dir)) / EPISODES)
    start = time.perf_counter()
    episodes = cache.run(agent, [*drift, *static], window=args.batch_size)
    seconds = time.perf_counter() - start
    moved, still = episodes[: len(drift)], episodes[len(drift) :]
    result: dict = {
        "agent": args.agent, "n": args.n, "seed": args.seed, "domain": args.domain, "tiers": {},
        "episodes_run": cache.misses, "episodes_cached": cache.hits, "seconds": round(seconds, 1),
    }  # fmt: skip
    print(f"{args.agent}: {len(drift)} drift cases and their onset-0 twins, {seconds:.0f} s")
    for tier in tiers:
        pairs = [(m.success, s.success) for c, m, s in zip(drift, moved, still, strict=True)
                 if max((p.tier for p in c.perturbations), key=TIERS.index) == tier]  # fmt: skip
        if not pairs:
            continue
        diff = PairedDelta.of(pairs)
        low, high = diff.interval
        onsets = sorted({p.after for c in drift for p in c.perturbations if p.tier == tier})
        print(f"  {tier}: drift {diff.a} vs onset 0 {diff.b} on the same {diff.n} cases: {diff} points")
        result["tiers"][tier] = {
            "n": diff.n, "drift": diff.a.value, "static": diff.b.value, "delta_points": diff.points,
            "low": low, "high": high, "only_drift": diff.only_a, "only_static": diff.only_b, "onsets": onsets,
        }  # fmt: skip
    write(args.out, result)


if __name__ == "__main__":
    main()
