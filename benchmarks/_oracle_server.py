"""The fake engine of ``bench_openai``: an asyncio HTTP/1.1 server (keep-alive, a coroutine per request, no
thread) in a process of its own, as a real engine is, so that it and the client do not share one interpreter
lock. It answers like an oracle that knows the gold plan: turn ``k`` of an episode calls the plan's ``k``-th
tool, and the turn after the last call answers. Each request sleeps a latency drawn uniformly from
``[LOW, HIGH]`` by a generator seeded with the seed and the request's body, so every run meets the same
latency for the same request, and the server logs each answered request (:class:`~_schedule.Served`) for the
benchmark's ideal.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import threading
import time
import zlib

from _schedule import Served

LOW, HIGH = 0.05, 0.5


class OracleServer:
    """The fake engine: an asyncio HTTP/1.1 server (keep-alive), one coroutine per request, no thread."""

    def __init__(self, plans: dict[str, list], seed: int, retry_after: str) -> None:
        self.plans, self.seed, self.retry_after = plans, seed, retry_after
        self.capacity: int | None = None  # None: takes every request
        self.busy = 0
        self.log: list[Served] = []
        self.throttled = 0

    def reset(self, capacity: int | None) -> None:
        self.capacity, self.log, self.throttled = capacity, [], 0

    def reply(self, query: str, turn: int) -> dict:
        plan = self.plans[query]
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

    async def answer(self, method: str, raw: bytes) -> tuple[int, dict, dict, tuple | None]:
        """The status, headers and body of the reply, and for a chat request, what the log keeps of it."""
        if method == "GET":  # the fingerprint's GET /models, which also warms the agent's pool
            return 200, {}, {"object": "list", "data": [{"id": "oracle-like", "owned_by": "bench"}]}, None
        if self.capacity is not None and self.busy >= self.capacity:
            self.throttled += 1
            return 429, {"Retry-After": self.retry_after}, {"error": {"message": "too many requests"}}, None
        self.busy += 1
        arrived = time.monotonic()
        latency = random.Random(zlib.crc32(raw, self.seed)).uniform(LOW, HIGH)
        await asyncio.sleep(latency)
        self.busy -= 1
        body = json.loads(raw)
        query = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        return 200, {}, self.reply(query, turn), (query, turn, arrived, latency)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                               if k.strip().lower() == "content-length"), 0)  # fmt: skip
                raw = await reader.readexactly(length) if length else b""
                status, headers, payload, served = await self.answer(method, raw)
                data = json.dumps(payload).encode()
                extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Too Many Requests'}\r\n{extra}"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                if served is not None:
                    query, turn, arrived, latency = served
                    self.log.append(Served(query, turn, arrived, time.monotonic(), latency))
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
            control.send((list(server.log), server.throttled, os.times()[:2]))


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

    def stats(self) -> tuple[list[Served], int, tuple[float, float]]:
        self.control.send(("stats",))
        return self.control.recv()

    def stop(self) -> None:
        self.control.send(("stop",))
        self.process.join(timeout=10)
