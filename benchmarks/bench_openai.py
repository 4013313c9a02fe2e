"""The ``openai:`` agent against a loopback OpenAI-compatible server whose every request takes 50 to
500 ms: requests per second at 32, 128 and 256 in flight against the ideal, and against a server that
answers 429 beyond what it can take, adaptive concurrency (AIMD) against a fixed one.

The fake server (stdlib ``ThreadingHTTPServer``, keep-alive, in a process of its own as a real server
is, so the two do not share one interpreter lock) answers like an oracle that knows the
gold plan: turn ``k`` of an episode calls the plan's ``k``-th tool, and the turn after the last call
answers, so each episode has len(plan) + 1 turns. Each request sleeps a latency drawn uniformly from
[50, 500] ms by a generator seeded with the seed and the request's body, so every run meets the same
latency for the same request.

- ``in_flight``: for each of 32, 128 and 256 requests in flight (a fixed limit), ``--rounds`` x that
  many episodes; requests per second against the ideal, in flight / mean latency. The bar: the ratio
  at 32 is at least 0.8. Past that the client's CPU per request (printed) caps what one Python
  process sends, whatever the server could take. At 32, the same episodes forced to lockstep (the
  agent behind a wrapper that does not declare ``concurrency``): each round waits for its slowest.
- ``throttled`` (``--rounds`` x capacity episodes): the server works on ``--capacity`` requests at once and
  answers 429 (``Retry-After``) to any beyond; the agent may send 256. Adaptive and fixed, same
  episodes: episodes lost (a request still turned away after the agent's retries), 429s, answered
  requests per second against the server's ideal (capacity / mean latency).

Prints both tables side by side and writes benchmarks/results/openai.json.

    .venv/bin/python benchmarks/bench_openai.py [--rounds 3] [--capacity 16] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
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
IN_FLIGHT = (32, 128, 256)
BAR = 0.8


class OracleServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of clients connect at once; the default backlog of 5 would drop SYNs

    def __init__(self, plans: dict[str, list], seed: int, retry_after: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plans, self.seed, self.retry_after = plans, seed, retry_after
        self.capacity: int | None = None  # None: takes every request
        self.busy = 0
        self.latencies: list[float] = []
        self.throttled = 0
        self.lock = threading.Lock()

    def reset(self, capacity: int | None) -> None:
        with self.lock:
            self.capacity, self.latencies, self.throttled = capacity, [], 0

    def admit(self) -> bool:
        with self.lock:
            if self.capacity is not None and self.busy >= self.capacity:
                self.throttled += 1
                return False
            self.busy += 1
            return True

    def done(self, latency: float) -> None:
        with self.lock:
            self.busy -= 1
            self.latencies.append(latency)

    def reply(self, body: dict) -> dict:
        query = next(m["content"] for m in body["messages"] if m["role"] == "user")
        plan = self.plans[query]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn < len(plan):
            tool, arguments = plan[turn]
            fn = {"name": tool, "arguments": json.dumps(arguments)}
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
        self._send(200, {"object": "list", "data": [{"id": "oracle-like", "owned_by": "bench"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        server: OracleServer = self.server  # type: ignore[assignment]
        if not server.admit():
            self._send(429, {"error": {"message": "too many requests"}}, {"Retry-After": server.retry_after})
            return
        latency = random.Random(zlib.crc32(raw, server.seed)).uniform(LOW, HIGH)
        time.sleep(latency)
        server.done(latency)
        self._send(200, server.reply(json.loads(raw)))

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def serve(plans: dict[str, list], seed: int, retry_after: str, control) -> None:
    """The server's process: it sends its port, then answers ``("reset", capacity)`` and ``("stats",)``."""
    server = OracleServer(plans, seed, retry_after)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    control.send(server.server_port)
    while (command := control.recv())[0] != "stop":
        if command[0] == "reset":
            server.reset(command[1])
            control.send(True)
        else:
            with server.lock:
                control.send((list(server.latencies), server.throttled))
    server.shutdown()


class Server:
    """The client's handle on the server's process."""

    def __init__(self, plans: dict[str, list], seed: int, retry_after: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.control, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(plans, seed, retry_after, theirs), daemon=True)
        self.process.start()
        self.url = f"http://127.0.0.1:{self.control.recv()}/v1"

    def reset(self, capacity: int | None) -> None:
        self.control.send(("reset", capacity))
        self.control.recv()

    def stats(self) -> tuple[list[float], int]:
        self.control.send(("stats",))
        return self.control.recv()

    def stop(self) -> None:
        self.control.send(("stop",))
        self.process.join(timeout=10)


class Lockstep:
    """The agent as the lockstep runner meets one that does not declare ``concurrency``."""

    def __init__(self, agent: object) -> None:
        self.agent = agent

    def act(self, turns):
        return self.agent.act(turns)


def measure(server: Server, agent, tasks: list, capacity: int | None = None, lockstep: bool = False) -> dict:
    import sandbox

    agent.fingerprint()  # imports httpx and opens the pool outside the timed part
    server.reset(capacity)
    envs = [sandbox.make_env("poi", t) for t in tasks]
    start, cpu = time.perf_counter(), time.process_time()
    episodes = sandbox.run_episodes(Lockstep(agent) if lockstep else agent, envs)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    latencies, throttled = server.stats()
    answered, mean = len(latencies), statistics.fmean(latencies)
    in_flight = capacity or agent.concurrency
    ideal = in_flight / mean
    return {
        "episodes": len(episodes),
        "lost": sum(e.outcome == "agent_error" for e in episodes),
        "answered": answered,
        "throttled": throttled,
        "wall_s": round(wall, 3),
        "requests_per_s": round(answered / wall, 2),
        "mean_latency_s": round(mean, 4),
        "ideal_rps": round(ideal, 2),
        "ratio": round(answered / wall / ideal, 3),
        "client_cpu_ms_per_request": round(1000 * cpu / max(answered + throttled, 1), 2),
        "limit": agent.in_flight.summary(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="episodes per run: this many times the in-flight limit")
    parser.add_argument("--capacity", type=int, default=16, help="requests the throttling server takes at once")
    parser.add_argument("--retry-after", default="1", help="the throttling server's Retry-After, in seconds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import sandbox
    from sandbox.agents.openai import OpenAIAgent

    most = args.rounds * max(IN_FLIGHT)
    tasks = [t for t in sandbox.tasks("poi", "test", 2 * most, args.seed) if t.plan][:most]
    plans = {t.query: [(c.tool, c.args) for c in t.plan] for t in tasks}
    server = Server(plans, args.seed, args.retry_after)
    url = server.url

    def agent(n: int, adaptive: bool) -> OpenAIAgent:
        return OpenAIAgent("oracle-like", url, concurrency=n, adaptive=adaptive, timeout=30)

    figures: dict = {"latency_s": [LOW, HIGH], "seed": args.seed, "rounds": args.rounds, "in_flight": {}}
    try:
        for n in IN_FLIGHT:
            figures["in_flight"][str(n)] = measure(server, agent(n, adaptive=False), tasks[: args.rounds * n])
        chosen = tasks[: args.rounds * IN_FLIGHT[0]]
        figures["lockstep_32"] = measure(server, agent(IN_FLIGHT[0], adaptive=False), chosen, lockstep=True)
        throttled_tasks = tasks[: args.rounds * args.capacity]
        figures["throttled"] = {
            "capacity": args.capacity,
            "retry_after": args.retry_after,
            "adaptive": measure(server, agent(max(IN_FLIGHT), True), throttled_tasks, args.capacity),
            "fixed": measure(server, agent(max(IN_FLIGHT), False), throttled_tasks, args.capacity),
        }
    finally:
        server.stop()
    figures["holds"] = figures["in_flight"][str(IN_FLIGHT[0])]["ratio"] >= BAR
    figures["python"] = platform.python_version()
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    figures["cpus"] = os.cpu_count()

    head = f"{'run':<22} {'episodes':>8} {'lost':>5} {'answered':>8} {'429s':>6} {'wall s':>7} {'req/s':>7}"
    print(head + f" {'ideal':>7} {'ratio':>6} {'limit lo-hi':>11} {'cpu ms/req':>10}")
    rows = [(f"{n} in flight", figures["in_flight"][str(n)]) for n in IN_FLIGHT]
    rows.append(("32 in flight, lockstep", figures["lockstep_32"]))
    rows += [(f"429 above {args.capacity}, {k}", figures["throttled"][k]) for k in ("adaptive", "fixed")]
    for name, r in rows:
        span = f"{r['limit']['lowest']}-{r['limit']['highest']}"
        print(
            f"{name:<22} {r['episodes']:>8} {r['lost']:>5} {r['answered']:>8} {r['throttled']:>6} {r['wall_s']:>7} "
            f"{r['requests_per_s']:>7} {r['ideal_rps']:>7} {r['ratio']:>6} {span:>11} "
            f"{r['client_cpu_ms_per_request']:>10}"
        )
    print("ideal: in flight (or the server's capacity) / mean latency; ratio: req/s over ideal")
    print("cpu ms/req: the client's CPU per request; 1000 / it is the most req/s one interpreter can send")
    print(f"load average {figures['load_average']} on {figures['cpus']} CPUs")
    print(f"holds (req/s >= {BAR} x {IN_FLIGHT[0]} / mean latency): {figures['holds']}")
    write("openai", figures)
    if not figures["holds"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
