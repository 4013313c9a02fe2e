"""``openagent train rl`` on our GRPO loop against TRL's GRPOTrainer, same settings, side by side in one run.

Run: python benchmarks/bench_rl_engines.py --init DIR [--steps 4 --tasks 6 --tasks-per-step 3 --group 4]

Each engine trains in its own process (so its peak resident memory is its own) from the same checkpoint on the
same train-pool cases with the same options; the engines alternate by step count only in the order they run.
Printed side by side: episodes (rollouts) per second of rollout time, seconds per step, peak RSS, and the training
reward's rise: per task, its mean reward in the last epoch minus in the first (each epoch plays every task once,
``group`` episodes each), with a bootstrap 95% interval over tasks, and the two engines' rises paired by task.
Writes benchmarks/results/bench_rl_engines.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import write

ROOT = Path(__file__).resolve().parents[1]


def run_engine(engine: str, args: argparse.Namespace, out: Path) -> dict:
    """Train with ``engine`` in a child process; its history, wall seconds and peak RSS (MiB)."""
    options = dict(out=str(out), init=args.init, tasks=args.tasks, steps=args.steps, group=args.group,
                   tasks_per_step=args.tasks_per_step, max_new_tokens=args.max_new_tokens, max_turns=args.max_turns,
                   reward=args.reward, save_every=0, progress=False, threads=args.threads, engine=engine,
                   seed=args.seed)  # fmt: skip
    code = f"from training.rl import RLConfig, train; train(RLConfig(**{options!r}))"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'benchmarks'}", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{engine}: the training process failed (status {status})")
    history = json.loads((out / "openagent-train.json").read_text())["history"]
    return {"history": history, "wall_s": round(wall, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def digit_share(episode: object) -> float:
    """A dense reward for timing the update fairly: the share of digits in the first reply. Our loop skips the
    update of a group whose rewards are all equal and TRL does not, so a reward that is 0 throughout (the product's,
    on an untrained model) would time our loop without its update (``--reward dense``)."""
    steps = getattr(episode, "steps", [])
    text = steps[0].reply if steps else ""
    return sum(c.isdigit() for c in text) / max(1, len(text))


def epochs(history: list[dict], group: int) -> list[dict[int, float]]:
    """Per epoch, each task's mean reward over its ``group`` episodes (an epoch: until a task comes round again)."""
    out: list[dict[int, float]] = [{}]
    for record in history:
        for k, case in enumerate(record["cases"]):
            if case in out[-1]:
                out.append({})
            out[-1][case] = statistics.fmean(record["rewards"][k * group : (k + 1) * group])
    return out


def interval(values: list[float], seed: int = 0) -> dict:
    """The mean with a bootstrap 95% percentile interval (10,000 resamples)."""
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(10_000))
    return {"mean": round(statistics.fmean(values), 4), "low": round(means[250], 4), "high": round(means[9749], 4),
            "n": len(values)}  # fmt: skip


def rise(history: list[dict], group: int) -> dict[int, float]:
    """Per task seen in both the first and the last full epoch: last minus first."""
    per_epoch = epochs(history, group)
    first, last = per_epoch[0], per_epoch[-1] if len(per_epoch) > 1 else {}
    return {case: last[case] - first[case] for case in first if case in last}


def summary(result: dict, group: int) -> dict:
    history = result["history"]
    rollout = sum(r["rollout_s"] for r in history)
    episodes = sum(len(r["rewards"]) for r in history)
    return {
        "episodes_per_s": round(episodes / rollout, 3) if rollout else None,
        "s_per_step": round(statistics.fmean(r["step_s"] for r in history), 2),
        "rollout_s_per_step": round(rollout / len(history), 2),
        "peak_rss_mib": result["peak_rss_mib"],
        "wall_s": result["wall_s"],
        "reward_first_step": history[0]["reward"],
        "reward_last_step": history[-1]["reward"],
        "signal_groups": f"{sum(r['signal_groups'] for r in history)}/{sum(r['groups'] for r in history)}",
        "rise": interval(list(rise(history, group).values())) if rise(history, group) else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--init", required=True, help="the checkpoint both engines start from")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument(
        "--tasks", type=int, default=6, help="the run's train tasks (an epoch: tasks / tasks-per-step steps)"
    )
    p.add_argument("--tasks-per-step", type=int, default=3)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument(
        "--reward",
        default="refusal-aware",
        help="completion, refusal-aware, or dense (digit_share: every group has signal; see its docstring)",
    )
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engines", default="own,trl")
    args = p.parse_args()
    if args.reward == "dense":
        args.reward = "bench_rl_engines:digit_share"
    engines = args.engines.split(",")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for engine in engines:
            print(f"training with engine {engine}...", file=sys.stderr, flush=True)
            results[engine] = run_engine(engine, args, Path(tmp) / engine)
    table = {e: summary(results[e], args.group) for e in engines}
    print(f"\n{'':24}" + "".join(f"{e:>14}" for e in engines))
    for key in ("episodes_per_s", "s_per_step", "rollout_s_per_step", "peak_rss_mib", "wall_s", "reward_first_step",
                "reward_last_step", "signal_groups"):  # fmt: skip
        print(f"{key:24}" + "".join(f"{table[e][key]!s:>14}" for e in engines))
    for e in engines:
        print(f"reward rise {e:>5} (last epoch - first, per task): {table[e]['rise']}")
    paired = None
    if len(engines) == 2:
        a, b = (rise(results[e]["history"], args.group) for e in engines)
        common = sorted(set(a) & set(b))
        if common:
            paired = interval([a[c] - b[c] for c in common])
            print(f"rise {engines[0]} - {engines[1]}, paired by task: {paired}")
        ratio = table[engines[1]]["s_per_step"] / table[engines[0]]["s_per_step"]
        print(f"s/step {engines[1]} / {engines[0]}: {ratio:.2f}x")
    load = os.getloadavg()
    write("bench_rl_engines", {"settings": vars(args), "engines": table, "paired_rise": paired,
                               "history": {e: results[e]["history"] for e in engines},
                               "loadavg_end": [round(x, 2) for x in load]})  # fmt: skip


if __name__ == "__main__":
    main()
