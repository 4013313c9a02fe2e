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
import asyncio
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write

LOW, HIGH = 0.05, 0.5
IN_FLIGHT = (32, 128, 256)
BAR = 0.8


class OracleServer:
    """The fake engine: an asyncio HTTP/1.1 server (keep-alive), one coroutine per request, no thread."""

    def __init__(self, plans: dict[str, list], seed: int, retry_after: str) -> None:
        self.plans, self.seed, self.retry_after = plans, seed, retry_after
        self.capacity: int | None = None  # None: takes every request
        self.busy = 0
        self.latencies: list[float] = []
        self.throttled = 0

    def reset(self, capacity: int | None) -> None:
        self.capacity, self.latencies, self.throttled = capacity, [], 0

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
        choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
        return {
            "id": f"cmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": "oracle-like",
            "choices": choices,
        }

    async def answer(self, method: str, raw: bytes) -> tuple[int, dict, dict]:
        if method == "GET":  # the fingerprint's GET /models, which also warms the agent's pool
            return 200, {}, {"object": "list", "data": [{"id": "oracle-like", "owned_by": "bench"}]}
        if self.capacity is not None and self.busy >= self.capacity:
            self.throttled += 1
            return 429, {"Retry-After": self.retry_after}, {"error": {"message": "too many requests"}}
        self.busy += 1
        latency = random.Random(zlib.crc32(raw, self.seed)).uniform(LOW, HIGH)
        await asyncio.sleep(latency)
        self.busy -= 1
        self.latencies.append(latency)
        return 200, {}, self.reply(json.loads(raw))

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                               if k.strip().lower() == "content-length"), 0)  # fmt: skip
                raw = await reader.readexactly(length) if length else b""
                status, headers, payload = await self.answer(method, raw)
                data = json.dumps(payload).encode()
                extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Too Many Requests'}\r\n{extra}"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def serve(plans: dict[str, list], seed: int, retry_after: str, control) -> None:
    """The server's process: it sends its port, then answers ``("reset", capacity)`` and ``("stats",)``
    (the control pipe is read in a thread; the counters it resets or copies are plain fields)."""
    server = OracleServer(plans, seed, retry_after)
    loop = asyncio.new_event_loop()
    listening = loop.run_until_complete(asyncio.start_server(server.connection, "127.0.0.1", 0, backlog=2048))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    control.send(listening.sockets[0].getsockname()[1])
    while (command := control.recv())[0] != "stop":
        if command[0] == "reset":
            loop.call_soon_threadsafe(server.reset, command[1])
            control.send(True)
        else:
            control.send((list(server.latencies), server.throttled, os.times()[:2]))


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

    def stats(self) -> tuple[list[float], int, tuple[float, float]]:
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

    agent.fingerprint()  # loads the HTTP library and opens the pool outside the timed part
    server.reset(capacity)
    _, _, (user0, sys0) = server.stats()
    envs = [sandbox.make_env("poi", t) for t in tasks]
    start, cpu = time.perf_counter(), time.process_time()
    episodes = sandbox.run_episodes(Lockstep(agent) if lockstep else agent, envs)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    latencies, throttled, (user1, sys1) = server.stats()
    answered, mean = len(latencies), statistics.fmean(latencies)
    in_flight = capacity or agent.concurrency
    ideal = in_flight / mean
    requests = max(answered + throttled, 1)
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
        "client_cpu_ms_per_request": round(1000 * cpu / requests, 3),
        "server_cpu_ms_per_request": round(1000 * (user1 - user0 + sys1 - sys0) / requests, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "limit": agent.in_flight.summary(),
    }


def libraries(url: str, in_flight: int, rounds: int) -> dict:
    """The two asynchronous HTTP clients alone, ``rounds`` x ``in_flight`` GET /models at ``in_flight`` at once
    on one pool each: client CPU per request (why the agent is on aiohttp)."""
    import aiohttp
    import httpx

    async def run(name: str) -> dict:
        async def timed(get) -> float:
            await asyncio.gather(*(get() for _ in range(in_flight)))  # opens the connections, untimed
            cpu = time.process_time()
            for _ in range(rounds):
                await asyncio.gather(*(get() for _ in range(in_flight)))
            return time.process_time() - cpu

        if name == "httpx":
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=in_flight)
            async with httpx.AsyncClient(limits=limits) as client:
                cpu = await timed(lambda: client.get(url + "/models"))
        else:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

                async def get() -> bytes:
                    async with session.get(url + "/models") as response:
                        return await response.read()

                cpu = await timed(get)
        return {"cpu_ms_per_request": round(1000 * cpu / (rounds * in_flight), 3),
                "load_average": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip

    return {name: asyncio.run(run(name)) for name in ("httpx", "aiohttp")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="episodes per run: this many times the in-flight limit")
    parser.add_argument("--capacity", type=int, default=16, help="requests the throttling server takes at once")
    parser.add_argument("--retry-after", default="1", help="the throttling server's Retry-After, in seconds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from _threaded_client import ThreadedOpenAIAgent

    import sandbox
    from sandbox.agents.openai import OpenAIAgent

    most = args.rounds * max(IN_FLIGHT)
    tasks = [t for t in sandbox.tasks("poi", "test", 2 * most, args.seed) if t.plan][:most]
    plans = {t.query: [(c.tool, c.args) for c in t.plan] for t in tasks}
    server = Server(plans, args.seed, args.retry_after)
    url = server.url
    kinds = {"threaded": ThreadedOpenAIAgent, "async": OpenAIAgent}

    def agent(kind: str, n: int, adaptive: bool) -> OpenAIAgent:
        return kinds[kind]("oracle-like", url, concurrency=n, adaptive=adaptive, timeout=30)

    figures: dict = {"latency_s": [LOW, HIGH], "seed": args.seed, "rounds": args.rounds, "in_flight": {}}
    try:
        for n in IN_FLIGHT:
            figures["in_flight"][str(n)] = {
                kind: measure(server, agent(kind, n, adaptive=False), tasks[: args.rounds * n]) for kind in kinds
            }
        chosen = tasks[: args.rounds * IN_FLIGHT[0]]
        figures["lockstep_32"] = measure(server, agent("async", IN_FLIGHT[0], adaptive=False), chosen, lockstep=True)
        throttled_tasks = tasks[: args.rounds * args.capacity]
        figures["throttled"] = {
            "capacity": args.capacity,
            "retry_after": args.retry_after,
            "adaptive": measure(server, agent("async", max(IN_FLIGHT), True), throttled_tasks, args.capacity),
            "fixed": measure(server, agent("async", max(IN_FLIGHT), False), throttled_tasks, args.capacity),
        }
        figures["libraries_256"] = libraries(url, max(IN_FLIGHT), args.rounds)
    finally:
        server.stop()
    top = figures["in_flight"][str(max(IN_FLIGHT))]["async"]
    figures["goal_256"] = {
        "cpu_ms_per_request_at_most_1": top["client_cpu_ms_per_request"] <= 1.0,
        "nothing_lost": all(r[k]["lost"] == 0 for r in figures["in_flight"].values() for k in kinds),
        "ratio_at_least_0.8": top["ratio"] >= BAR,
    }
    figures["holds"] = figures["in_flight"][str(IN_FLIGHT[0])]["async"]["ratio"] >= BAR
    figures["python"] = platform.python_version()
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    figures["cpus"] = os.cpu_count()

    head = f"{'run':<30} {'episodes':>8} {'lost':>5} {'answered':>8} {'429s':>6} {'wall s':>7} {'req/s':>7}"
    print(head + f" {'ideal':>7} {'ratio':>6} {'limit lo-hi':>11} {'cpu ms/req':>10} {'server':>7} {'load 1m':>7}")
    rows = [(f"{n} in flight, {k}", figures["in_flight"][str(n)][k]) for n in IN_FLIGHT for k in kinds]
    rows.append(("32 in flight, async, lockstep", figures["lockstep_32"]))
    rows += [(f"429 above {args.capacity}, async, {k}", figures["throttled"][k]) for k in ("adaptive", "fixed")]
    for name, r in rows:
        span = f"{r['limit']['lowest']}-{r['limit']['highest']}"
        print(
            f"{name:<30} {r['episodes']:>8} {r['lost']:>5} {r['answered']:>8} {r['throttled']:>6} {r['wall_s']:>7} "
            f"{r['requests_per_s']:>7} {r['ideal_rps']:>7} {r['ratio']:>6} {span:>11} "
            f"{r['client_cpu_ms_per_request']:>10} {r['server_cpu_ms_per_request']:>7} {r['load_average'][0]:>7}"
        )
    for n in IN_FLIGHT:
        pair = figures["in_flight"][str(n)]
        cpu = pair["threaded"]["client_cpu_ms_per_request"] / max(pair["async"]["client_cpu_ms_per_request"], 1e-9)
        rate = pair["async"]["requests_per_s"] / pair["threaded"]["requests_per_s"]
        print(f"{n} in flight: async/threaded req/s {rate:.2f}x, threaded/async cpu per request {cpu:.1f}x")
    for name, r in figures["libraries_256"].items():
        print(f"{max(IN_FLIGHT)} GETs at once on one {name} pool: {r['cpu_ms_per_request']} ms cpu/request "
              f"(load {r['load_average'][0]})")  # fmt: skip
    print("ideal: in flight (or the server's capacity) / mean latency; ratio: req/s over ideal")
    print("cpu ms/req: the client's CPU per request; 1000 / it is the most req/s one interpreter can send;")
    print("server: the asyncio server's CPU per request (its own process); load 1m: load average after the run")
    print(f"load average {figures['load_average']} on {figures['cpus']} CPUs")
    print(f"goal at {max(IN_FLIGHT)} in flight (async): {figures['goal_256']}")
    print(f"holds (async req/s >= {BAR} x {IN_FLIGHT[0]} / mean latency): {figures['holds']}")
    write("openai", figures)
    if not figures["holds"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
