"""The ``openai:`` agent against a loopback OpenAI-compatible server whose every request takes 50 to
500 ms: do episodes keep ``concurrency`` requests in flight, or wait in lockstep for the slowest?

The fake server (stdlib ``ThreadingHTTPServer``, keep-alive) answers like an oracle that knows the
gold plan: turn ``k`` of an episode calls the plan's ``k``-th tool, and the turn after the last call
answers, so each episode has len(plan) + 1 turns. Each request sleeps a latency drawn uniformly from
[50, 500] ms by a generator seeded with the seed and the request's body, so both runs below meet the
same latency for the same request. The same episodes run twice in one process: through the runner
that lets each episode advance on its own reply (``concurrency`` > 1), and forced to lockstep (the
agent behind a wrapper that does not declare ``concurrency``; each round still sends its requests
``concurrency`` at a time). Two workloads: many episodes per call (256, as the evaluation core's
batches), where the bar must hold: requests per second >= 0.8 * concurrency / mean latency; and one
episode per slot (32), where a lockstep round lasts as long as its slowest request. Prints both and
writes benchmarks/results/openai.json.

    .venv/bin/python benchmarks/bench_openai.py [--episodes 256] [--concurrency 32] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write

LOW, HIGH = 0.05, 0.5


class OracleServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 32 clients connect at once; the default backlog of 5 would drop SYNs

    def __init__(self, plans: dict[str, list], seed: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plans, self.seed = plans, seed
        self.latencies: list[float] = []
        self.lock = threading.Lock()

    def reply(self, body: dict) -> dict:
        query = next(m["content"] for m in body["messages"] if m["role"] == "user")
        plan = self.plans[query]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn < len(plan):
            call = plan[turn]
            fn = {"name": call.tool, "arguments": json.dumps(call.args)}
            calls = [{"id": f"c{turn}", "type": "function", "function": fn}]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        else:
            message = {"role": "assistant", "content": "Done: that is all I found."}
        return {"object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes; with Nagle's algorithm the body waits for the client's
    # delayed ACK of the headers (40 ms on Linux), which no real server makes a client wait.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # the fingerprint's GET /models, which also warms the agent's pool
        data = json.dumps({"object": "list", "data": [{"id": "oracle-like", "owned_by": "bench"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        latency = random.Random(zlib.crc32(raw, self.server.seed)).uniform(LOW, HIGH)
        time.sleep(latency)
        data = json.dumps(self.server.reply(json.loads(raw))).encode()
        with self.server.lock:
            self.server.latencies.append(latency)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class Lockstep:
    """The agent as the lockstep runner meets one that does not declare ``concurrency``."""

    def __init__(self, agent: object) -> None:
        self.agent = agent

    def act(self, turns):
        return self.agent.act(turns)


def measure(server: OracleServer, agent: object, client: object, tasks: list) -> dict:
    import sandbox

    client.fingerprint()  # imports httpx and opens the pool outside the timed part
    server.latencies.clear()
    envs = [sandbox.make_env("poi", t) for t in tasks]
    start = time.perf_counter()
    episodes = sandbox.run_episodes(agent, envs)
    wall = time.perf_counter() - start
    requests, mean = len(server.latencies), statistics.fmean(server.latencies)
    return {
        "episodes": len(episodes),
        "requests": requests,
        "wall_s": round(wall, 3),
        "requests_per_s": round(requests / wall, 2),
        "mean_latency_s": round(mean, 4),
        "outcomes": {o: [e.outcome for e in episodes].count(o) for o in sorted({e.outcome for e in episodes})},
        "turns": [len(e.steps) for e in episodes],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=256, help="episodes of the run that the bar is checked on")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import sandbox
    from sandbox.agents.openai import OpenAIAgent

    tasks = [t for t in sandbox.tasks("poi", "test", 4 * args.episodes, args.seed) if t.plan][: args.episodes]
    server = OracleServer({t.query: list(t.plan) for t in tasks}, args.seed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    fresh = lambda: OpenAIAgent("oracle-like", url, concurrency=args.concurrency, timeout=10, retries=0)
    # The bar's run: many episodes per call, as the evaluation core's batches. Then one episode per
    # slot, where a lockstep round lasts as long as the slowest of its `concurrency` requests; the
    # bar does not apply there (the last episodes leave slots idle whatever the runner).
    workloads = {"many": tasks, "one_per_slot": tasks[: args.concurrency]}
    figures: dict = {"concurrency": args.concurrency, "latency_s": [LOW, HIGH], "seed": args.seed}
    try:
        for name, chosen in workloads.items():
            agent = fresh()
            independent = measure(server, agent, agent, chosen)
            agent = fresh()
            lockstep = measure(server, Lockstep(agent), agent, chosen)
            assert independent["turns"] == lockstep["turns"] and independent["outcomes"] == lockstep["outcomes"]
            for run in (independent, lockstep):
                del run["turns"]
                run["target_rps"] = round(0.8 * args.concurrency / run["mean_latency_s"], 2)
                run["ratio"] = round(run["requests_per_s"] / run["target_rps"], 3)  # >= 1 holds the bar
            speedup = round(independent["requests_per_s"] / lockstep["requests_per_s"], 2)
            figures[name] = {"independent": independent, "lockstep": lockstep, "speedup": speedup}
    finally:
        server.shutdown()
        server.server_close()
    figures["holds"] = figures["many"]["independent"]["ratio"] >= 1.0
    figures["python"] = platform.python_version()

    head = f"{'workload':<13} {'runner':<12} {'episodes':>8} {'requests':>8} {'wall s':>7} {'req/s':>7} {'target':>7}"
    print(head + f" {'ratio':>6} {'mean lat s':>10}")
    for name in workloads:
        for runner in ("independent", "lockstep"):
            r = figures[name][runner]
            print(
                f"{name:<13} {runner:<12} {r['episodes']:>8} {r['requests']:>8} {r['wall_s']:>7} "
                f"{r['requests_per_s']:>7} {r['target_rps']:>7} {r['ratio']:>6} {r['mean_latency_s']:>10}"
            )
        print(f"{name:<13} speedup {figures[name]['speedup']}x")
    bar = f"req/s >= 0.8 x {args.concurrency} / mean latency, {args.episodes} episodes"
    print(f"holds ({bar}): {figures['holds']}")
    write("openai", figures)
    if not figures["holds"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
