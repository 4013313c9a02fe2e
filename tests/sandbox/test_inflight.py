"""How many requests the ``openai:`` agent keeps in flight: AIMD on 429s and missed deadlines, and what
the server said of itself in the report."""

import asyncio
import json
import threading
import time

import pytest

import sandbox
from sandbox import make_env, run_episodes
from sandbox.agents.inflight import InFlight
from sandbox.agents.openai import OpenAIAgent
from sandbox.evaluation import evaluate

TASKS = [t for t in sandbox.tasks("poi", "test", 96) if t.plan][:32]


def settle(limit: InFlight, signal: str, n: int = 1) -> None:
    for _ in range(n):
        permit = limit.admit()
        permit.signal = signal
        limit.release(permit)


def test_the_limit_doubles_each_round_trip_until_the_first_cut_then_grows_by_one():
    limit = InFlight(ceiling=256, start=4)
    settle(limit, "answered", 4)
    assert int(limit.limit) == 8  # slow start: one more per answered request
    settle(limit, "throttled")
    assert int(limit.limit) == 4
    settle(limit, "answered", 5)
    assert 5 < limit.limit < 5.5  # now about one per round trip: 1/limit per answered request
    settle(limit, "answered", 40_000)
    assert limit.limit == 256  # never past the ceiling


def test_throttles_from_one_round_trip_cut_the_limit_once():
    limit = InFlight(ceiling=64, start=32)
    crowd = [limit.admit() for _ in range(20)]  # all sent before the server said anything
    for permit in crowd:
        permit.signal = "throttled"
        limit.release(permit)
    assert limit.limit == 16 and limit.summary()["throttled"] == 20 and limit.summary()["cuts"] == 1
    settle(limit, "throttled")  # a request sent after the cut: the server is still crowded
    assert limit.limit == 8
    settle(limit, "throttled", 10)
    assert limit.limit == 1  # the floor
    settle(limit, "failed", 3)  # an unreachable server says nothing of its load
    assert limit.limit == 1 and limit.summary()["failed"] == 3


def test_a_fixed_limit_never_moves():
    limit = InFlight(ceiling=12, adaptive=False)
    settle(limit, "throttled", 5)
    settle(limit, "answered", 5)
    assert limit.limit == 12 and limit.summary()["lowest"] == limit.summary()["highest"] == 12


def test_no_more_than_the_limit_are_in_flight_and_they_are_served_in_turn():
    limit = InFlight(ceiling=3, adaptive=False)
    peak, now, order = [0], [0], []

    async def request(n):
        async with limit.slot() as permit:
            order.append(n)
            now[0] += 1
            peak[0] = max(peak[0], now[0])
            await asyncio.sleep(0.02)
            now[0] -= 1
            permit.signal = "answered"

    async def crowd():
        await asyncio.gather(*(request(n) for n in range(12)))

    asyncio.run(crowd())
    assert peak[0] == 3 and limit.summary()["peak_in_flight"] == 3 and limit.summary()["waits"] == 9
    assert order == list(range(12)) and limit.in_flight == 0


def test_a_request_cancelled_while_it_waits_gives_its_turn_to_the_next():
    limit = InFlight(ceiling=1, adaptive=False)

    async def scenario():
        held = limit.admit()
        first = asyncio.ensure_future(limit.acquire())
        second = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        limit.release(held)  # wakes the first in line, which is cancelled before it runs
        first.cancel()
        permit = await asyncio.wait_for(second, 1)
        limit.release(permit)
        return first.cancelled()

    assert asyncio.run(scenario()) and limit.in_flight == 0


# --- against a server that can take only so many at once ----------------------------------------------


def crowded(capacity: int, latency: float, retry_after: str = "0.05"):
    """``respond`` for the ``serve`` fixture: a server that works on ``capacity`` requests at once and answers
    429 to any beyond them. It replies as the gold plan goes: turn k calls the plan's k-th tool, then answers."""
    plans = {t.query: list(t.plan) for t in TASKS}
    busy, lock = [0], threading.Lock()
    stats = {"throttled": 0, "answered": 0, "peak": 0}

    def respond(method, path, body):
        if method == "GET":
            return 200, {}, {"object": "list", "data": [{"id": "m"}]}
        with lock:
            if busy[0] >= capacity:
                stats["throttled"] += 1
                return 429, {"Retry-After": retry_after}, {"error": "too many requests"}
            busy[0] += 1
            stats["peak"] = max(stats["peak"], busy[0])
        time.sleep(latency)
        with lock:
            busy[0] -= 1
            stats["answered"] += 1
        plan = plans[next(m["content"] for m in body["messages"] if m["role"] == "user")]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn < len(plan):
            fn = {"name": plan[turn].tool, "arguments": json.dumps(plan[turn].args)}
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{turn}", "function": fn}]}
        else:
            message = {"role": "assistant", "content": "Done."}
        return 200, {}, {"choices": [{"index": 0, "message": message}]}

    respond.stats = stats
    return respond


def drive(serve, adaptive: bool) -> tuple[list, dict, dict]:
    respond = crowded(capacity=6, latency=0.03)
    agent = OpenAIAgent("m", serve(respond).url, concurrency=48, adaptive=adaptive, retries=3, backoff=0.02)
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS])
    return episodes, respond.stats, agent.in_flight.summary()


def test_adaptive_concurrency_loses_nothing_where_a_fixed_one_is_turned_away(serve):
    adaptive, adaptive_server, limit = drive(serve, adaptive=True)
    fixed, fixed_server, _ = drive(serve, adaptive=False)
    # nothing lost: every episode went through its whole plan and its answer, no request failed
    assert [len(e.steps) for e in adaptive] == [len(t.plan) + 1 for t in TASKS]
    assert not any(s.error for e in adaptive for s in e.steps)
    assert limit["cuts"] >= 1 and limit["lowest"] <= 6 < limit["ceiling"]
    lost = sum(e.outcome == "agent_error" for e in fixed)
    assert lost > 0 and all("HTTP 429" in e.steps[-1].error for e in fixed if e.outcome == "agent_error")
    assert adaptive_server["throttled"] < fixed_server["throttled"] / 2, (adaptive_server, fixed_server)


def test_a_missed_deadline_cuts_the_limit(serve):
    def respond(method, path, body):
        time.sleep(0.3)
        return 200, {}, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "late"}}]}

    agent = OpenAIAgent("m", serve(respond).url, concurrency=32, timeout=0.1)
    [reply] = agent.act([sandbox.agent.Turn("ep", [{"role": "user", "content": "hi"}], [])])
    assert "deadline" in reply.error
    assert agent.in_flight.summary()["throttled"] == 1 and agent.in_flight.limit == 8  # 16 halved


def test_requests_that_missed_their_deadline_in_an_engines_queue_are_retried_after_the_cut(serve):
    """An engine that serves one request at a time: the first burst queues past the deadline. A request
    that had company in flight may have waited behind it, so it is retried; one that was alone is not."""
    one_at_a_time = threading.Lock()

    def respond(method, path, body):
        with one_at_a_time:
            time.sleep(0.2)
        return 200, {}, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "I cannot do that."}}]}

    # the queue outlasts the deadline once 13 wait (0.2 s each against 2.5 s), as the in-flight limit grows; after
    # a cut they fit, and a request alone has 12 times its service time, room for a loaded machine.
    agent = OpenAIAgent("m", serve(respond).url, concurrency=32, timeout=2.5, backoff=0.2)
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS])
    limit = agent.in_flight.summary()
    assert limit["throttled"] > 0 and limit["cuts"] >= 1  # the queue did outlast the deadline
    failed = [e.steps[-1].error for e in episodes if e.outcome == "agent_error"]
    assert failed == []


# --- what the server said of itself ----------------------------------------------------------------------


def test_the_report_holds_what_the_server_said_of_itself(serve):
    def respond(method, path, body):
        if path == "/v1/models":
            entry = {"id": "m", "object": "model", "owned_by": "llamacpp", "meta": {"n_params": 1}}
            return 200, {"Server": "engine/1.2"}, {"object": "list", "data": [entry]}
        if path == "/props":
            return 200, {}, {"build_info": "b1234", "total_slots": 4, "chat_template": "x" * 5000, "nested": {}}
        if path == "/version":
            return 404, {}, {"error": "not found"}
        return 200, {}, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "I cannot do that."}}]}

    server = serve(respond)
    agent = OpenAIAgent("m", server.url)
    report = evaluate(agent, tiers=1, n=4, cache_dir=None)
    said = report.meta["server"]
    assert said["models"] == [{"id": "m", "object": "model", "owned_by": "llamacpp"}]
    assert "engine/1.2" in said["server"]  # with the stdlib server's own
    assert said["props"]["build_info"] == "b1234" and said["props"]["total_slots"] == 4
    assert len(said["props"]["chat_template"]) < 400 and "nested" not in said["props"]
    assert "version" not in said
    assert said["in_flight"]["adaptive"] is True and said["in_flight"]["requests"] >= 8
    asked = [path for method, path, *_ in server.seen if method == "GET"]
    agent.server_report()
    assert [path for method, path, *_ in server.seen if method == "GET"] == asked  # each asked once
    assert json.loads(json.dumps(report.meta)) == report.meta


@pytest.mark.parametrize("adaptive", [True, False])
def test_a_pickled_agent_keeps_its_settings_and_starts_a_fresh_limit(adaptive):
    import pickle

    agent = OpenAIAgent("m", "http://127.0.0.1:9/v1", concurrency=40, adaptive=adaptive)
    settle(agent.in_flight, "throttled")
    copy = pickle.loads(pickle.dumps(agent))
    assert copy.adaptive is adaptive and copy.in_flight.ceiling == 40
    assert copy.in_flight.summary()["throttled"] == 0
