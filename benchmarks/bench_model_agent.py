"""How fast the model agent generates on this machine: batch 32 against batch 1, and the cross-turn
KV cache against re-prefilling the whole conversation every turn, all in one run.

Episodes are scripted to 3 turns each, so every configuration does the same work whatever the
untrained model says: turn 1 is the sandbox's system prompt, tool specs and query; after each reply,
the reply (as the assistant's text, with the gold plan's next call) and that call's real tool
result join the conversation. Greedy decoding, so a row's replies are the same in every
configuration (checked). Prints a table and writes benchmarks/results/model_agent.json.

    .venv/bin/python benchmarks/bench_model_agent.py [--max-new-tokens 64] [--batch 32] [--single 4]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results" / "model_agent.json"


def scripted_episodes(domain: str, n: int, seed: int) -> list[dict]:
    import sandbox

    episodes = []
    for task in [t for t in sandbox.tasks(domain, "test", 3 * n, seed) if t.plan][:n]:
        env = sandbox.make_env(domain, task)
        episodes.append(
            {
                "id": task.id,
                "env": env,
                "plan": list(task.plan),
                "messages": env.reset(),
                "tools": env.tool_specs(),
            }
        )
    return episodes


def extend(episode: dict, reply_text: str, turn: int) -> None:
    """The reply, the gold plan's next call and that call's real result join the conversation."""
    plan = episode["plan"]
    call = plan[turn % len(plan)]
    result = episode["env"].call(call.tool, call.args)
    episode["messages"] = [
        *episode["messages"],
        {
            "role": "assistant",
            "content": reply_text,
            "tool_calls": [{"type": "function", "function": {"name": call.tool, "arguments": call.args}}],
        },
        {"role": "tool", "name": call.tool, "content": episode["env"].observe(result)},
    ]


def reset_peak_rss() -> None:
    with contextlib.suppress(OSError):  # Linux only: resets VmHWM, so each configuration has its own peak
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(agent, episodes: list[dict], batch: int, turns: int) -> dict:
    """Drive the episodes ``batch`` at a time through ``turns`` turns; time and count everything."""
    from sandbox.agent import Turn

    agent.stats = dict.fromkeys(agent.stats, 0)
    agent.reset()
    replies: dict[str, list[str]] = {}
    reset_peak_rss()
    start = time.perf_counter()
    for lo in range(0, len(episodes), batch):
        chunk = episodes[lo : lo + batch]
        for turn in range(turns):
            out = agent.act([Turn(e["id"], e["messages"], e["tools"]) for e in chunk])
            for e, reply in zip(chunk, out, strict=True):
                replies.setdefault(e["id"], []).append(reply.meta["completion_ids"])
                if turn < turns - 1:
                    extend(e, reply.text, turn)
        agent.close([e["id"] for e in chunk])
    seconds = time.perf_counter() - start
    stats = dict(agent.stats)
    return {
        "batch": batch,
        "episodes": len(episodes),
        "turns": turns,
        "seconds": round(seconds, 2),
        "generated_tokens": stats["generated"],
        "prefilled_tokens": stats["prefilled"],
        "reused_tokens": stats["reused"],
        "prefill_s": round(stats["prefill_s"], 2),
        "decode_s": round(stats["decode_s"], 2),
        "decode_steps": stats["decode_steps"],
        "generated_tok_per_s": round(stats["generated"] / seconds, 2),
        "episodes_per_s": round(len(episodes) / seconds, 4),
        "peak_rss_mb": round(peak_rss_mb()),
        "_replies": replies,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default", help="hf:PATH without the hf: (default: the default base)")
    parser.add_argument("--dtype", default="fp32", help="fp32, bf16 or auto (default fp32)")
    parser.add_argument("--batch", type=int, default=32, help="the big batch (default 32)")
    parser.add_argument("--single", type=int, default=4, help="episodes run one at a time (default 4)")
    parser.add_argument(
        "--cache-batch",
        type=int,
        default=8,
        help="batch of the cross-turn cache comparison (default 8: re-prefilling is slow)",
    )
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    import torch

    from training.inference.model_agent import HFAgent

    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    agent = HFAgent(args.model, dtype=args.dtype, max_new_tokens=args.max_new_tokens)
    load_s = time.perf_counter() - t0
    plain = HFAgent(
        model=agent.model,
        tokenizer=agent.tokenizer,
        max_new_tokens=args.max_new_tokens,
        cache_across_turns=False,
        share_prefixes=False,
    )
    load = os.getloadavg()
    print(
        f"model {agent.name} ({agent.generator.dtype}), loaded in {load_s:.1f} s; torch threads "
        f"{torch.get_num_threads()}; load average {load[0]:.1f}; {args.turns}-turn scripted episodes, "
        f"greedy, at most {args.max_new_tokens} new tokens a turn",
        flush=True,
    )

    n = max(args.batch, args.single, args.cache_batch)
    configs = [
        ("batch 1, cross-turn cache", agent, 1, args.single),
        (f"batch {args.batch}, cross-turn cache", agent, args.batch, args.batch),
        (f"batch {args.cache_batch}, cross-turn cache", agent, args.cache_batch, args.cache_batch),
        (f"batch {args.cache_batch}, re-prefill every turn", plain, args.cache_batch, args.cache_batch),
    ]
    rows = {}
    for name, which, batch, count in configs:
        result = run(which, scripted_episodes("poi", n, args.seed)[:count], batch, args.turns)
        rows[name] = result
        print(
            f"  {name:<40} {result['seconds']:>8.1f} s  {result['generated_tok_per_s']:>7.1f} gen tok/s  "
            f"{result['episodes_per_s']:>7.3f} episodes/s  prefilled {result['prefilled_tokens']:>6}  "
            f"reused {result['reused_tokens']:>6}  peak RSS {result['peak_rss_mb']} MB  "
            f"(prefill {result['prefill_s']:.0f} s, {result['decode_steps']} decode steps "
            f"{result['decode_s']:.0f} s)",
            flush=True,
        )

    replies = [r.pop("_replies") for r in rows.values()]
    same = all(replies[0][k] == other[k] for other in replies[1:] for k in replies[0] if k in other)
    single, big = rows[configs[0][0]], rows[configs[1][0]]
    cached, uncached = rows[configs[2][0]], rows[configs[3][0]]
    summary = {
        "batch_speedup_tok_per_s": round(big["generated_tok_per_s"] / single["generated_tok_per_s"], 2),
        "batch_speedup_episodes_per_s": round(big["episodes_per_s"] / single["episodes_per_s"], 2),
        "cross_turn_cache_speedup": round(uncached["seconds"] / cached["seconds"], 2),
        "same_replies_in_every_configuration": same,
    }
    print(
        f"batch {args.batch} vs batch 1: {summary['batch_speedup_tok_per_s']}x generated tok/s, "
        f"{summary['batch_speedup_episodes_per_s']}x episodes/s (target 6x)"
    )
    print(
        f"cross-turn cache vs re-prefill (batch {args.cache_batch}, {args.turns} turns): "
        f"{summary['cross_turn_cache_speedup']}x faster (target 2x)"
    )
    print(f"same replies in every configuration: {same}")
    report = {
        "model": agent.name,
        "dtype": str(agent.generator.dtype),
        "max_new_tokens": args.max_new_tokens,
        "turns": args.turns,
        "threads": torch.get_num_threads(),
        "load_average_at_start": load[0],
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "configurations": rows,
        "summary": summary,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
