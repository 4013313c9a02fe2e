"""One episode whose agent sends a 10 MB string argument on every turn: seconds, and the episode's size.

Run: python benchmarks/bench_huge_argument.py
The agent writes ``<tool_call>{"name": "find_place", "arguments": {"query": "AAAA..."}}</tool_call>`` (10 MB)
each turn, as a runaway generation would; the episode runs through the episode cache, as ``openagent eval`` does.
"""

from __future__ import annotations

import tempfile
import time

from _common import write

import sandbox
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache

ARGUMENT_CHARS = 10_000_000


def main() -> None:
    reply = '<tool_call>{"name": "find_place", "arguments": {"query": "' + "A" * ARGUMENT_CHARS + '"}}</tool_call>'

    def agent(messages, tools):
        return reply

    case = Case(sandbox.tasks("poi", "test", 1)[0])
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        [episode] = EpisodeCache(folder).run(agent, [case])
        seconds = time.perf_counter() - start
    size = len(episode.model_dump_json())
    print(
        f"one episode, a {ARGUMENT_CHARS:,}-character argument each turn: {seconds:.2f} s, "
        f"{len(episode.steps)} steps, outcome {episode.outcome}, {size / 1e6:.2f} MB as JSON"
    )
    write(
        "huge_argument",
        {
            "argument_chars": ARGUMENT_CHARS,
            "seconds": seconds,
            "steps": len(episode.steps),
            "outcome": episode.outcome,
            "episode_json_bytes": size,
        },
    )


if __name__ == "__main__":
    main()
