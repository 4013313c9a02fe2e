"""A loopback HTTP server for the tests of the HTTP agents: a function of each request gives the answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Respond = Callable[[str, str, Any], tuple[int, dict[str, str], Any]]
"""``respond(method, path, body)`` gives ``(status, headers, payload)``: the payload as bytes, or data sent as JSON."""


class LoopbackServer(ThreadingHTTPServer):
    """Answers each request on 127.0.0.1 with ``respond``, from the moment it is made until :meth:`close`.

    ``seen`` lists what each request carried, ``(method, path, headers, body)``; inside ``respond``,
    ``current.headers`` are the headers of the request being answered; ``url`` is its OpenAI-style base URL.
    """

    daemon_threads = True
    request_queue_size = 256  # many clients connect at once; the default backlog of 5 would drop SYNs

    def __init__(self, respond: Respond) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.respond = respond
        self.seen: list[tuple[str, str, dict[str, str], Any]] = []
        self.lock = threading.Lock()
        self.current = threading.local()
        self.url = f"http://127.0.0.1:{self.server_port}/v1"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: the agent reuses its connections
    disable_nagle_algorithm = True  # or the body, a second write, waits for the client's delayed ACK

    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def _answer(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size)) if size else None
        headers = dict(self.headers)
        with self.server.lock:
            self.server.seen.append((self.command, self.path, headers, body))
        self.server.current.headers = headers
        status, extra, payload = self.server.respond(self.command, self.path, body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        if not any(name.lower() == "content-type" for name in extra):
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass
