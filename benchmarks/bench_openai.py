"""The ``openai:`` agent against a loopback OpenAI-compatible server whose every request takes 50 to
500 ms (``_oracle_server``: asyncio, a process of its own, an oracle's replies, the same latency for the same
request in every run): requests per second at 32, 128 and 256 in flight against the ideal, and against a
server that answers 429 beyond what it can take, adaptive concurrency (AIMD) against a fixed one.

The ideal (``_schedule``) is the wall time of the same episodes, with the latencies the server gave them in
this run, run by a client and a server that cost nothing, as many at once as the limit: each episode is a
chain of requests and the batch is finite, so ``in flight / mean latency`` (printed beside it) is a rate that
no client reaches once fewer episodes are left than slots. The ratio is that ideal's wall time over the
measured one; the bar: at least 0.8 at 32 in flight (exit 1 below it).

- ``in_flight``: for each of 32, 128 and 256 requests in flight (a fixed limit), ``--rounds`` x that many
  episodes, the threaded client (a thread per request, the one the agent replaced) and the asynchronous
  one side by side. At 32, the same episodes forced to lockstep (the agent behind a wrapper that does
  not declare ``concurrency``): each round waits for its slowest.
- ``throttled`` (``--rounds`` x capacity episodes): the server works on ``--capacity`` requests at once and
  answers 429 (``Retry-After``) to any beyond; the agent may send 256. Adaptive and fixed, same
  episodes: episodes lost (a request still turned away after the agent's retries), 429s, and the ratio
  to the ideal at the server's capacity.
- ``libraries_256``: the two asynchronous HTTP libraries alone, client CPU per request.

Every row also says where the time went: how full the server was kept while there were episodes to start
(``busy``), the client's turnaround from a reply to the episode's next request, both processes' CPU per
request and the load average. Prints the table and writes benchmarks/results/openai.json.

    .venv/bin/python benchmarks/bench_openai.py [--rounds 3] [--capacity 16] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import write
from _oracle_server import HIGH, LOW, Server
from _schedule import summary

IN_FLIGHT = (32, 128, 256)
BAR = 0.8


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
    start, cpu = time.monotonic(), time.process_time()  # the server's clock: CLOCK_MONOTONIC is system-wide
    episodes = sandbox.run_episodes(Lockstep(agent) if lockstep else agent, envs)
    end, cpu = time.monotonic(), time.process_time() - cpu
    log, throttled, (user1, sys1) = server.stats()
    requests = max(len(log) + throttled, 1)
    return {
        "episodes": len(episodes),
        "lost": sum(e.outcome == "agent_error" for e in episodes),
        "answered": len(log),
        "throttled": throttled,
        "wall_s": round(end - start, 3),
        "requests_per_s": round(len(log) / (end - start), 2),
        "mean_latency_s": round(statistics.fmean(r.latency for r in log), 4),
        **summary(log, [t.query for t in tasks], capacity or agent.concurrency, start, end),
        "client_cpu_ms_per_request": round(1000 * cpu / requests, 3),
        "server_cpu_ms_per_request": round(1000 * (user1 - user0 + sys1 - sys0) / requests, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "limit": agent.in_flight.summary(),
    }


COLUMNS = [
    ("episodes", 8, lambda r: r["episodes"]),
    ("lost", 4, lambda r: r["lost"]),
    ("answered", 8, lambda r: r["answered"]),
    ("429s", 4, lambda r: r["throttled"]),
    ("wall s", 6, lambda r: f"{r['wall_s']:.2f}"),
    ("ideal s", 7, lambda r: f"{r['ideal_s']:.2f}"),
    ("ratio", 5, lambda r: f"{r['ratio']:.2f}"),
    ("req/s", 6, lambda r: f"{r['requests_per_s']:.0f}"),
    ("limit/lat", 9, lambda r: f"{r['limit_rps']:.0f}"),
    ("at limit", 8, lambda r: f"{r['limit_ratio']:.2f}"),
    ("drain", 5, lambda r: f"{r['drain']:.2f}"),
    ("busy", 5, lambda r: f"{r['busy']:.2f}"),
    ("turn ms", 10, lambda r: "{:.1f}/{:.1f}".format(*r["turnaround_ms"])),
    ("limit", 7, lambda r: f"{r['limit']['lowest']}-{r['limit']['highest']}"),
    ("cpu ms/req", 10, lambda r: f"{r['client_cpu_ms_per_request']:.2f}"),
    ("server", 6, lambda r: f"{r['server_cpu_ms_per_request']:.2f}"),
    ("load", 5, lambda r: f"{r['load_average'][0]:.2f}"),
]
LEGEND = """\
ideal s: the same episodes with this run's latencies, run by a client and server that cost nothing (each episode
  into the first free slot, in the runner's order); ratio: ideal s / wall s, the share of the reachable rate
limit/lat: in flight (or the server's capacity) / mean latency, a rate no finite batch of multi-turn episodes
  reaches; at limit: req/s over it (the ratio this benchmark printed before); drain: the share of it the
  ideal reaches (slots left empty as the batch runs out)
busy: requests at the server / in flight, while every slot had an episode (Little's law: the share of limit/lat
  the client kept up then); turn ms: reply sent -> the episode's next request arrived, median/95th percentile
cpu ms/req: the client's CPU per request (1000 / it: the most req/s one interpreter sends); server: the asyncio
  server's CPU per request (its own process); load: 1-minute load average after the run"""


def cpu_model() -> str:
    """The processor's name, as ``lscpu`` gives it (Linux), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    parser.add_argument(
        "--clients", default="threaded,async", choices=["threaded,async", "async"], metavar="threaded,async|async",
        help="the clients measured in flight: both side by side, or the asynchronous agent alone (the threaded one "
        "takes about 10 ms of CPU a request at 256 in flight, minutes at many rounds)",
    )  # fmt: skip
    args = parser.parse_args()

    from _threaded_client import ThreadedOpenAIAgent

    import sandbox
    from sandbox.agents.openai import OpenAIAgent

    most = args.rounds * max(IN_FLIGHT)
    unique: dict = {}  # the server knows an episode by its query
    for t in sandbox.tasks("poi", "test", 2 * most, args.seed):
        if t.plan:
            unique.setdefault(t.query, t)
    tasks = list(unique.values())[:most]
    if len(tasks) < most:
        parser.error(f"--rounds {args.rounds}: the poi test split gave {len(tasks)} distinct cases, {most} needed")
    plans = {t.query: [(c.tool, c.args) for c in t.plan] for t in tasks}
    server = Server(plans, args.seed, args.retry_after)
    url = server.url
    clients = {"threaded": ThreadedOpenAIAgent, "async": OpenAIAgent}
    kinds = args.clients.split(",")

    def agent(kind: str, n: int, adaptive: bool) -> OpenAIAgent:
        return clients[kind]("oracle-like", url, concurrency=n, adaptive=adaptive, timeout=30)

    figures: dict = {"latency_s": [LOW, HIGH], "seed": args.seed, "rounds": args.rounds, "in_flight": {}}
    figures["clients"] = kinds
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
    figures["cpu_model"] = cpu_model()

    rows = [(f"{n} in flight, {k}", figures["in_flight"][str(n)][k]) for n in IN_FLIGHT for k in kinds]
    rows.append(("32 in flight, async, lockstep", figures["lockstep_32"]))
    rows += [(f"429 above {args.capacity}, async, {k}", figures["throttled"][k]) for k in ("adaptive", "fixed")]
    print(f"{'run':<30}" + "".join(f" {name:>{width}}" for name, width, _ in COLUMNS))
    for name, r in rows:
        print(f"{name:<30}" + "".join(f" {cell(r):>{width}}" for _, width, cell in COLUMNS))
    for n in IN_FLIGHT if len(kinds) == 2 else ():
        pair = figures["in_flight"][str(n)]
        cpu = pair["threaded"]["client_cpu_ms_per_request"] / max(pair["async"]["client_cpu_ms_per_request"], 1e-9)
        rate = pair["async"]["requests_per_s"] / pair["threaded"]["requests_per_s"]
        print(f"{n} in flight: async/threaded req/s {rate:.2f}x, threaded/async cpu per request {cpu:.1f}x")
    for name, r in figures["libraries_256"].items():
        print(f"{max(IN_FLIGHT)} GETs at once on one {name} pool: {r['cpu_ms_per_request']} ms cpu/request "
              f"(load {r['load_average'][0]})")  # fmt: skip
    print(LEGEND)
    print(f"load average {figures['load_average']} on {figures['cpus']} CPUs ({figures['cpu_model']})")
    print(f"goal at {max(IN_FLIGHT)} in flight (async): {figures['goal_256']}")
    print(f"holds (async at {IN_FLIGHT[0]} in flight: ideal s / wall s >= {BAR}): {figures['holds']}")
    write("openai", figures)
    if not figures["holds"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
