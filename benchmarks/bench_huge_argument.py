"""One episode whose agent sends a 10 MB string argument on every turn: seconds, and the episode's size.

Run: python benchmarks/bench_huge_argument.py
The agent writes the call as text (``<tool_call>{"name": "find_place", "arguments": {"query": "AAAA..."}}</tool_call>``)
or as an OpenAI-style structured call whose arguments string is 10 MB, each turn, as a runaway generation
would; the episode runs through the episode cache, as ``openagent eval`` does.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from _common import write

import sandbox
from sandbox import Reply
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache

ARGUMENT_CHARS = 10_000_000


class Runaway:
    """Gives ``reply`` on every turn; a fingerprint of its own, so that the cache key does not hash the reply."""

    def __init__(self, reply: object) -> None:
        self.reply = reply

    def fingerprint(self) -> str:
        return "runaway"

    def act(self, turns: list) -> list:
        return [self.reply for _ in turns]


def one_episode(reply: object) -> dict:
    agent = Runaway(reply)
    case = Case(sandbox.tasks("poi", "test", 1)[0])
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        [episode] = EpisodeCache(folder).run(agent, [case])
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "steps": len(episode.steps), "outcome": episode.outcome,
            "episode_json_bytes": len(episode.model_dump_json())}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=ARGUMENT_CHARS, help="characters of the argument (default 10 MB)")
    chars = parser.parse_args().chars
    arguments = json.dumps({"query": "A" * chars})
    replies = {
        "text": f'<tool_call>{{"name": "find_place", "arguments": {arguments}}}</tool_call>',
        "structured": Reply(tool_calls=[{"function": {"name": "find_place", "arguments": arguments}}]),
    }
    figures = {"argument_chars": chars}
    for shape, reply in replies.items():
        figures[shape] = row = one_episode(reply)
        print(f"{shape:>10} call, a {chars:,}-character argument each turn: {row['seconds']:.2f} s, "
              f"{row['steps']} steps, outcome {row['outcome']}, {row['episode_json_bytes'] / 1e6:.2f} MB")  # fmt: skip
    write("huge_argument", figures)


if __name__ == "__main__":
    main()
