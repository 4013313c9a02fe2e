"""RL speed: rollout episodes per second, batched (as GRPO runs them) against one at a time, and s/step.

Run: python benchmarks/bench_rl.py --init DIR     (an SFT checkpoint; the demo's is a good one)

In the same run, on the same model and the same sampled tasks:
- batched: one step's ``tasks_per_step × group`` episodes in one lockstep batch (``training.rollouts.rollout``);
- one at a time: the same kind of episodes run one by one through the same agent (a plain rollout
  loop), on a subset, since it is the slow one;
- seconds per RL step at the demo's settings (rollout, then the update), over a few real steps.
Wall and CPU seconds are both given: on a shared machine, CPU seconds are disturbed least.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from _common import write

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--init", required=True, help="the checkpoint RL starts from (an SFT output directory)")
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--sequential", type=int, default=8, help="episodes in the one-at-a-time loop")
    p.add_argument("--steps", type=int, default=2, help="RL steps timed at the demo's settings (0: skip)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=None, help="override the RL default (shorter: a quicker run)")
    p.add_argument("--max-turns", type=int, default=None, help="override the RL default (shorter: a quicker run)")
    args = p.parse_args()

    import torch

    from sandbox.episode import run_episodes
    from training.inference.model_agent import HFAgent
    from training.rl import RLConfig, load_policy, train
    from training.rl_demo import RLDemoSettings
    from training.rollouts import rollout, run_cases, step_indices

    torch.set_num_threads(args.threads)
    settings = RLDemoSettings(group=args.group, tasks_per_step=args.tasks_per_step)
    cfg = settings.config(args.init, "unused", "completion")
    cfg.max_new_tokens = args.max_new_tokens or cfg.max_new_tokens
    cfg.max_turns = args.max_turns or cfg.max_turns
    model, tokenizer, _ = load_policy(cfg)
    pool = run_cases(cfg, [])
    cases = [pool[i] for i in step_indices(cfg, len(pool), 0)]

    (episodes, stats), wall, cpu = timed(lambda: rollout(model, tokenizer, cases, cfg, step=0))
    batched = {"episodes": len(episodes), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "episodes_per_s": round(len(episodes) / wall, 3), "generated_tokens": stats["generated"],
               "generated_tokens_per_s": round(stats["generated"] / wall, 1),
               "turns_per_episode": round(stats["turns"] / len(episodes), 2)}  # fmt: skip
    print(f"batched rollout: {batched}")

    generator_model = model.get_base_model()
    agent = HFAgent(model=generator_model, tokenizer=tokenizer, max_new_tokens=cfg.max_new_tokens,
                    temperature=cfg.temperature, seed=1, name="one-at-a-time")  # fmt: skip
    envs = [case.env() for case in cases for _ in range(cfg.group)][:: max(1, len(episodes) // args.sequential)]
    envs = envs[: args.sequential]
    model.eval()
    turns = min(cfg.max_turns, max(c.max_steps for c in cases))
    singles, wall, cpu = timed(lambda: [run_episodes(agent, [env], turns)[0] for env in envs])
    sequential = {"episodes": len(singles), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                  "episodes_per_s": round(len(singles) / wall, 3), "generated_tokens": agent.stats["generated"],
                  "generated_tokens_per_s": round(agent.stats["generated"] / wall, 1)}  # fmt: skip
    print(f"one at a time: {sequential}")
    speedup = batched["episodes_per_s"] / sequential["episodes_per_s"]
    speedup_cpu = (batched["episodes"] / batched["cpu_s"]) / (sequential["episodes"] / sequential["cpu_s"])
    print(f"speed-up: {speedup:.1f}x wall, {speedup_cpu:.1f}x CPU (target >= 5x)")

    steps = []
    if args.steps:
        with tempfile.TemporaryDirectory() as out:
            run = RLConfig(**{**cfg.to_dict(), "out": out, "steps": args.steps, "save_every": 0, "progress": False,
                              "threads": args.threads})  # fmt: skip
            train(run)
            import json

            steps = json.loads((Path(out) / "openagent-train.json").read_text())["history"]
        for s in steps:
            print(f"RL step {s['step']}: {s['step_s']} s (rollout {s['rollout_s']} s), reward {s['reward']}")

    write("rl", {
        "init": args.init, "threads": args.threads, "load_average": os.getloadavg(),
        "settings": {"group": cfg.group, "tasks_per_step": cfg.tasks_per_step, "max_new_tokens": cfg.max_new_tokens,
                     "max_turns": cfg.max_turns, "temperature": cfg.temperature, "lora": cfg.lora},
        "rollout_batched": batched, "rollout_one_at_a_time": sequential,
        "speedup_wall": round(speedup, 2), "speedup_cpu": round(speedup_cpu, 2), "target_speedup": 5,
        "rl_steps": [{k: s[k] for k in ("step", "step_s", "rollout_s", "reward", "rows", "scored_tokens")}
                     for s in steps],
        "seconds_per_step": round(sum(s["step_s"] for s in steps) / len(steps), 1) if steps else None,
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    })  # fmt: skip


if __name__ == "__main__":
    main()
