"""A server is waited for while it is alive and moving, not for a fixed time: a loaded machine only slows its start
(issue #45)."""

from __future__ import annotations

import sys

import pytest

from training import serving

SLOW_START = """
import http.server, sys, time
for i in range(12):  # 3 s of start, a sign of life every 0.25 s: longer than the stall allowed, never still
    print("loading", i, flush=True)
    time.sleep(0.25)


class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"data": []}')


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Models).serve_forever()
"""


def test_a_server_that_starts_slowly_but_moves_is_waited_for(monkeypatch):
    port = serving._free_port()
    with serving._running([sys.executable, "-c", SLOW_START, str(port)], "slow", port, wait=1.0) as url:
        assert url.endswith(f"{port}/v1")


def test_a_server_that_stalls_is_given_up_with_its_log():
    port = serving._free_port()
    with (
        pytest.raises(RuntimeError, match="made no progress for 1 s"),
        serving._running([sys.executable, "-c", "import time; time.sleep(60)"], "still", port, wait=1.0),
    ):
        pass
