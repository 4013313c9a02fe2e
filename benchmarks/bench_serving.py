"""A checkpoint served by a real inference engine against the same checkpoint in process: ``openai:``
through llama.cpp's OpenAI-compatible server (or ``transformers serve``) beside ``hf:``, greedy, on the
same cases as ``openagent eval`` draws them.

Both agents run the evaluation core's episodes (the fixed sample of ``--n`` cases per tier and their
clean twins, through ``EpisodeCache.run`` without a disk cache, ``--batch`` at a time). Printed side by
side: episodes per second, generated tokens per second (each reply's tokens counted with the
checkpoint's tokenizer, the same count for both), and how often the two agree: same outcome, and the
same first reply word for word. llama.cpp computes with its own kernels, so near-ties in the logits may
tip a greedy choice the other way; the agreement says how often they do.

The server for llama.cpp gets the checkpoint as written by ``openagent gguf`` (f32: the same weights).
Needs the ``train`` extra, and the ``serve`` extra for llama.cpp. Writes benchmarks/results/serving.json.

    .venv/bin/python benchmarks/bench_serving.py [--checkpoint default] [--engine llama-cpp] [--n 4] [--tiers 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write


def run(agent, cases, batch: int) -> tuple[list, float]:
    from sandbox.evaluation.cache import EpisodeCache

    start = time.perf_counter()
    episodes = EpisodeCache(None).run(agent, cases, window=batch)
    return episodes, time.perf_counter() - start


def figures(episodes: list, wall: float, tokenizer) -> dict:
    tokens = sum(len(tokenizer(s.reply, add_special_tokens=False).input_ids) for e in episodes for s in e.steps)
    outcomes = [e.outcome for e in episodes]
    return {
        "episodes": len(episodes),
        "wall_s": round(wall, 2),
        "episodes_per_s": round(len(episodes) / wall, 3),
        "tokens": tokens,
        "tokens_per_s": round(tokens / wall, 1),
        "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="default", help="a checkpoint directory, or 'default' (the base)")
    parser.add_argument("--engine", choices=("llama-cpp", "transformers"), default="llama-cpp")
    parser.add_argument("--n", type=int, default=4, help="cases per tier (each with its clean twin)")
    parser.add_argument("--tiers", default="1", help="tiers as openagent eval takes them (1, 1,2, all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=128, help="most tokens per reply, both agents")
    parser.add_argument("--batch", type=int, default=16, help="episodes at a time, both agents")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="the server's threads")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sandbox.agents.openai import OpenAIAgent
    from sandbox.evaluation.draw import draw_cases
    from training.inference.base import prepare_default_base
    from training.inference.model_agent import HFAgent

    checkpoint = prepare_default_base() if args.checkpoint in ("default", "hf:default") else Path(args.checkpoint)
    tiers = args.tiers if args.tiers == "all" else [int(t) for t in args.tiers.split(",")]
    drawn = draw_cases(tiers, args.n, args.seed, "poi", "test")
    cases = [*drawn, *[c.clean() for c in drawn]]

    local = HFAgent(checkpoint, max_new_tokens=args.max_tokens, dtype="fp32")
    direct, direct_wall = run(local, cases, args.batch)
    with tempfile.TemporaryDirectory() as tmp, serving(args, checkpoint, Path(tmp)) as (url, alias):
        remote = OpenAIAgent(alias, url, max_tokens=args.max_tokens, concurrency=args.batch, timeout=600)
        served, served_wall = run(remote, cases, args.batch)
        about = remote.server_report()

    same_outcome = sum(a.outcome == b.outcome for a, b in zip(direct, served, strict=True))

    def text(reply: str) -> str:  # the server decodes without special tokens; HFAgent keeps them
        for token in local.tokenizer.all_special_tokens:
            reply = reply.replace(token, "")
        return reply

    same_reply = sum(text(a.steps[0].reply) == b.steps[0].reply for a, b in zip(direct, served, strict=True))
    result = {
        "checkpoint": str(checkpoint), "engine": args.engine, "tiers": args.tiers, "n": args.n, "seed": args.seed,
        "max_tokens": args.max_tokens, "batch": args.batch,
        "hf": figures(direct, direct_wall, local.tokenizer),
        "served": figures(served, served_wall, local.tokenizer),
        "agreement": {"outcome": round(same_outcome / len(cases), 3), "first_reply": round(same_reply / len(cases), 3)},
        "server": about, "python": platform.python_version(), "load_average": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip
    print(f"{len(cases)} episodes ({args.n} cases per tier {args.tiers} and their clean twins), greedy, "
          f"max {args.max_tokens} tokens per reply")  # fmt: skip
    print(f"{'agent':<28} {'wall s':>8} {'episodes/s':>10} {'tokens':>7} {'tokens/s':>9}  outcomes")
    for name, key in ((f"hf: in process (batch {args.batch})", "hf"), (f"openai: via {args.engine}", "served")):
        r = result[key]
        print(f"{name:<28} {r['wall_s']:>8} {r['episodes_per_s']:>10} {r['tokens']:>7} {r['tokens_per_s']:>9}  "
              f"{r['outcomes']}")  # fmt: skip
    print(f"agreement: same outcome {same_outcome}/{len(cases)}, same first reply {same_reply}/{len(cases)}")
    print(f"server: {about.get('server')}; in flight {about['in_flight']}")
    write("serving", result)


class serving:
    """The engine serving ``checkpoint``: ``(url, model name)`` inside the block."""

    def __init__(self, args: argparse.Namespace, checkpoint: Path, tmp: Path) -> None:
        self.args, self.checkpoint, self.tmp = args, checkpoint, tmp

    def __enter__(self) -> tuple[str, str]:
        if self.args.engine == "llama-cpp":
            from training.gguf_export import write_gguf
            from training.serving import llama_cpp_server

            gguf = write_gguf(self.checkpoint, self.tmp / "model.gguf")
            self.server = llama_cpp_server(gguf, alias="model", threads=self.args.threads)
            return self.server.__enter__(), "model"
        from training.serving import transformers_server

        self.server = transformers_server(self.checkpoint)
        return self.server.__enter__(), str(self.checkpoint)

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


if __name__ == "__main__":
    main()
