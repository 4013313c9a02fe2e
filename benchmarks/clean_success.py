"""Clean success of an agent on the held-out POI test split, by family and by outcome (the 90% bar of SFT).

python benchmarks/clean_success.py hf:$HOME/.cache/pytest-openagent/demo/sft --n 88
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

from _common import write


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("agent", help="agent spec: hf:PATH, oracle, static, ...")
    p.add_argument("--n", type=int, default=88, help="test tasks (families in turn; default 88 = 8 per family)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()

    from sandbox import tasks
    from sandbox.evaluation.specs import load_agent
    from training.demo import clean_success

    start = time.perf_counter()
    rate, episodes = clean_success(load_agent(args.agent), args.n, args.seed, args.batch_size)
    seconds = time.perf_counter() - start
    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for task, episode in zip(tasks("poi", "test", args.n, args.seed), episodes, strict=True):
        families[task.family][0] += episode.success
        families[task.family][1] += 1
    outcomes = Counter(e.outcome for e in episodes)
    print(f"{args.agent}: clean success {rate} in {seconds:.0f} s")
    print("outcomes:", dict(outcomes.most_common()))
    print("by family:", {f: f"{ok}/{n}" for f, (ok, n) in sorted(families.items())})
    write(
        "clean_success",
        {"agent": args.agent, "n": args.n, "seed": args.seed, "success": rate.value, "interval": list(rate.interval),
         "outcomes": dict(outcomes), "families": dict(families), "seconds": round(seconds, 1)},
    )  # fmt: skip


if __name__ == "__main__":
    main()
