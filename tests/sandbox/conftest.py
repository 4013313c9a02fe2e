"""Loopback HTTP servers for the HTTP agents' tests."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients connect at once; the default backlog of 5 would drop SYNs


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: the agent reuses its connections
    disable_nagle_algorithm = True  # or the body, a second write, waits for the client's delayed ACK

    def do_POST(self):
        self._answer()

    def do_GET(self):
        self._answer()

    def _answer(self):
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size)) if size else None
        with self.server.lock:
            self.server.seen.append((self.command, self.path, dict(self.headers), body))
        status, headers, payload = self.server.respond(self.command, self.path, body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """``serve(respond)`` starts an HTTP server on loopback; ``respond(method, path, body)`` gives
    ``(status, headers, payload)``. The server's ``seen`` lists what each request carried."""
    servers = []

    def start(respond):
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.respond, httpd.seen, httpd.lock = respond, [], threading.Lock()
        httpd.url = f"http://127.0.0.1:{httpd.server_port}/v1"
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return httpd

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()
