"""The ``openai:`` agent against loopback servers that misbehave as real ones do, and the runner that
lets each episode advance on its own reply instead of waiting for the slowest of a round."""

import json
import pickle
import socket
import struct
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

import sandbox
from sandbox import OracleAgent, make_env, run_episodes
from sandbox.agent import RequestFailed, Turn
from sandbox.agents.http import parse_retry_after
from sandbox.agents.openai import CLIENT_VERSION, OpenAIAgent, read_reply

TASKS = sandbox.tasks("poi", "test", 24)
HELLO = Turn("ep-test", [{"role": "user", "content": "hello"}], [])


def answer(text="I cannot help with that."):
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def user_query(messages):
    return next(m["content"] for m in messages if m["role"] == "user")


# --- servers ---------------------------------------------------------------------------------------


class RawServer:
    """A TCP server that hands the raw socket to ``handle(conn, n, stop)``: for breaking HTTP on purpose."""

    def __init__(self, handle):
        self.handle, self.connections, self.stop = handle, 0, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(conn, self.connections), daemon=True).start()

    def _one(self, conn, n):
        with conn:
            try:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, rest = data.split(b"\r\n\r\n", 1)
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.handle(conn, n, self.stop)
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.sock.close()


@pytest.fixture
def raw():
    servers = []

    def start(handle):
        servers.append(RawServer(handle))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _ok(conn, text="done"):
    data = json.dumps(answer(text)).encode()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
    )


def trickle_headers(conn, n, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not stop.is_set():
        conn.sendall(b"a")
        time.sleep(0.2)


def trickle_body(conn, n, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b" ")
        time.sleep(0.2)


def hang(conn, n, stop):
    stop.wait(30)


def reset_first(conn, n, stop):
    if n == 1:  # an abortive close: the client reads a connection reset
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return
    _ok(conn)


# --- the deadline ----------------------------------------------------------------------------------


@pytest.mark.parametrize("handle", [trickle_headers, trickle_body, hang], ids=["headers", "body", "hung"])
def test_a_slow_or_hung_server_is_cut_at_the_deadline_and_not_retried(raw, handle):
    server = raw(handle)
    agent = OpenAIAgent("m", server.url, timeout=1.0, retries=3, backoff=0.01)
    start = time.monotonic()
    [reply] = agent.act([HELLO])
    elapsed = time.monotonic() - start
    assert isinstance(reply, RequestFailed) and "1 s deadline" in reply.error
    # one deadline for the whole request: a deadline per read would never end while the server trickles, and a
    # retry would open a second connection; the bound stays below the hung server's 30 s and leaves load its room
    assert 0.9 < elapsed < 20, elapsed
    assert server.connections == 1


def test_a_connection_reset_is_retried(raw):
    server = raw(reset_first)
    agent = OpenAIAgent("m", server.url, timeout=5, retries=2, backoff=0.01)
    [reply] = agent.act([HELLO])
    assert reply.text == "done" and server.connections == 2


def test_an_unreachable_server_fails_after_the_retries():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed on leaving: nothing listens there
    agent = OpenAIAgent("m", f"http://127.0.0.1:{port}/v1", timeout=2, retries=2, backoff=0.01)
    [reply] = agent.act([HELLO])
    assert isinstance(reply, RequestFailed) and "unreachable after 3 tries" in reply.error


# --- Retry-After -----------------------------------------------------------------------------------

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("2.5", 2.5),
        ("99999", 30.0),  # clamped: never a sleep of hours
        ("-1", None),  # nonsense falls back to the backoff
        ("abc", None),
        ("nan", None),
        ("inf", None),
        ("", None),
        (None, None),
        (format_datetime(NOW + timedelta(seconds=10), usegmt=True), 10.0),
        (format_datetime(NOW + timedelta(days=3), usegmt=True), 30.0),
        (format_datetime(NOW - timedelta(hours=1), usegmt=True), 0.0),  # a date past means now
    ],
)
def test_retry_after_is_read_and_clamped(value, seconds):
    assert parse_retry_after(value, limit=30.0, now=NOW) == seconds


@pytest.mark.parametrize("value", ["99999", "-1", "abc", "Wed, 21 Oct 2125 07:28:00 GMT"])
def test_a_429_is_retried_within_the_agents_limit_whatever_retry_after_says(serve, value):
    calls = []

    def respond(method, path, body):
        calls.append(path)
        return (429, {"Retry-After": value}, {"error": "slow down"}) if len(calls) == 1 else (200, {}, answer("ok"))

    agent = OpenAIAgent("m", serve(respond).url, retries=2, backoff=0.05, max_wait=0.3)
    start = time.monotonic()
    [reply] = agent.act([HELLO])
    assert reply.text == "ok" and len(calls) == 2
    assert time.monotonic() - start < 2.0


def test_a_server_error_is_retried_and_the_last_one_reported(serve):
    statuses = iter([503, 502, 200])
    server = serve(lambda method, path, body: (s := next(statuses), {}, answer("ok") if s == 200 else {"e": s}))
    [reply] = OpenAIAgent("m", server.url, retries=2, backoff=0.01).act([HELLO])
    assert reply.text == "ok" and len(server.seen) == 3
    failing = serve(lambda method, path, body: (500, {}, {"error": "down"}))
    [reply] = OpenAIAgent("m", failing.url, retries=1, backoff=0.01).act([HELLO])
    assert "HTTP 500" in reply.error and len(failing.seen) == 2


def test_a_client_error_is_not_retried_and_says_what_the_server_said(serve):
    server = serve(lambda method, path, body: (400, {}, {"error": {"message": "bad tools"}}))
    [reply] = OpenAIAgent("m", server.url, retries=3, backoff=0.01).act([HELLO])
    assert "HTTP 400" in reply.error and "bad tools" in reply.error and len(server.seen) == 1


# --- malformed replies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"choices": [{"message": None}]}, "no message"),
        ({"choices": []}, "no choices"),
        ({"object": "error"}, "no choices"),
        ([1, 2], "no choices"),
        ({"choices": [{"message": {"content": 7}}]}, "not text"),
        ({"choices": [{"message": {"content": None, "tool_calls": {"a": 1}}}]}, "not a list"),
        ({"choices": [{"message": {"tool_calls": [{"function": {"name": 3, "arguments": "{}"}}]}}]}, "function name"),
        ({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": 3}}]}}]}, "arguments"),
        ({"choices": [{"message": {"tool_calls": ["f"]}}]}, "function name"),
    ],
)
def test_a_malformed_reply_is_a_failed_request(data, error):
    reply = read_reply(data)
    assert isinstance(reply, RequestFailed) and error in reply.error


def test_a_good_reply_is_read():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    reply = read_reply({"choices": [{"message": {"content": None, "tool_calls": [call]}}]})
    assert reply.text == "" and reply.tool_calls == [{"id": "c1", "function": {"name": "f", "arguments": '{"x": 1}'}}]
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}
    assert read_reply(parts).text == "ab"


class Lockstep:
    """An agent as the lockstep runner sees one that does not declare ``concurrency``."""

    def __init__(self, agent):
        self.agent = agent

    def act(self, turns):
        return self.agent.act(turns)


@pytest.mark.parametrize("lockstep", [False, True], ids=["independent", "lockstep"])
def test_one_reply_without_a_message_fails_only_its_own_episode(serve, lockstep):
    count = [0]
    lock = threading.Lock()

    def respond(method, path, body):
        with lock:
            count[0] += 1
            n = count[0]
        return 200, {}, ({"choices": [{"message": None}]} if n == 7 else answer())

    agent = OpenAIAgent("m", serve(respond).url, concurrency=16)
    episodes = run_episodes(Lockstep(agent) if lockstep else agent, [make_env("poi", t) for t in TASKS[:16]])
    outcomes = [e.outcome for e in episodes]
    assert outcomes.count("agent_error") == 1 and len(outcomes) == 16
    failed = next(e for e in episodes if e.outcome == "agent_error")
    assert failed.steps[-1].error.startswith("request failed: the server's reply has no message")


# --- the API key -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [302, 307])
def test_a_redirect_to_another_origin_never_carries_the_key_there(serve, monkeypatch, status):
    monkeypatch.setenv("OPENAGENT_API_KEY", "sk-secret-123")
    elsewhere = serve(lambda method, path, body: (200, {}, answer("stolen")))  # another port: another origin
    first = serve(lambda method, path, body: (status, {"Location": elsewhere.url + "/chat/completions"}, {}))
    [reply] = OpenAIAgent("m", first.url, retries=2).act([HELLO])
    assert isinstance(reply, RequestFailed) and "another origin" in reply.error
    assert first.seen[0][2]["Authorization"] == "Bearer sk-secret-123"
    assert elsewhere.seen == []


def test_a_same_origin_307_is_followed_with_the_key(serve, monkeypatch):
    monkeypatch.setenv("OPENAGENT_API_KEY", "sk-secret-123")

    def respond(method, path, body):
        if path == "/v1/chat/completions":
            return 307, {"Location": "/v2/chat/completions"}, {}
        return 200, {}, answer("moved")

    server = serve(respond)
    [reply] = OpenAIAgent("m", server.url).act([HELLO])
    assert reply.text == "moved"
    assert [(p, h.get("Authorization"), b["model"]) for _, p, h, b in server.seen] == [
        ("/v1/chat/completions", "Bearer sk-secret-123", "m"),
        ("/v2/chat/completions", "Bearer sk-secret-123", "m"),
    ]


def test_a_proxy_from_the_environment_is_used(serve, monkeypatch):
    proxy = serve(lambda method, path, body: (200, {}, answer("via the proxy")))
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
    [reply] = OpenAIAgent("m", "http://model.invalid:8000/v1", retries=0).act([HELLO])
    assert reply.text == "via the proxy"
    assert [path for _, path, *_ in proxy.seen] == ["http://model.invalid:8000/v1/chat/completions"]


def test_the_key_is_read_at_each_request_and_kept_nowhere(serve, monkeypatch):
    server = serve(lambda method, path, body: (200, {}, answer()))
    agent = OpenAIAgent("m", server.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAGENT_API_KEY", "sk-secret-123")
    agent.act([HELLO])
    monkeypatch.delenv("OPENAGENT_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-456")
    agent.act([HELLO])
    assert [h.get("Authorization") for _, path, h, _ in server.seen if path.endswith("/chat/completions")] == [
        "Bearer sk-secret-123",
        "Bearer sk-other-456",
    ]
    copy = pickle.loads(pickle.dumps(agent))
    for text in (repr(agent), agent.fingerprint(), pickle.dumps(agent).decode("latin-1"), repr(vars(agent))):
        assert "sk-secret" not in text and "sk-other" not in text
    assert copy.act([HELLO])[0].text == "I cannot help with that."
    assert copy.fingerprint() == agent.fingerprint()


def test_importing_the_package_does_not_import_an_http_client():
    code = "import sys, sandbox, pytest_openagent; print([m for m in ('aiohttp', 'httpx') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- the fingerprint -------------------------------------------------------------------------------


def test_the_fingerprint_holds_what_the_server_says_of_the_model(serve):
    entry = {"id": "m", "object": "model", "created": 1700000000, "owned_by": "vllm", "root": "/ckpt/a"}
    entry |= {"max_model_len": 4096, "permission": [{"id": "perm-1", "created": time.time()}]}

    def respond(method, path, body):
        if method == "GET" and path == "/v1/models":
            return 200, {}, {"object": "list", "data": [{"id": "other", "root": "/x"}, dict(entry)]}
        return 200, {}, answer()

    server = serve(respond)
    agent = OpenAIAgent("m", server.url, temperature=0.7, top_p=0.9, seed=3)
    fp = agent.fingerprint()
    assert fp.startswith(
        f"openai-{CLIENT_VERSION}:m@{server.url}/chat/completions:t=0.7:max_tokens=512:top_p=0.9:seed=3:server="
    )
    assert '"root": "/ckpt/a"' in fp and '"owned_by": "vllm"' in fp and '"created": 1700000000' in fp
    assert "perm-1" not in fp
    assert agent.fingerprint() == fp and [m for m, *_ in server.seen] == ["GET"]  # asked once
    assert OpenAIAgent("m", server.url, temperature=0.7, top_p=0.9, seed=3).fingerprint() == fp
    assert OpenAIAgent("m", server.url, temperature=0.7, top_p=0.8, seed=3).fingerprint() != fp
    entry["root"] = "/ckpt/b"  # the server now serves other weights under the same name
    assert OpenAIAgent("m", server.url, temperature=0.7, top_p=0.9, seed=3).fingerprint() != fp


def test_a_created_stamp_that_is_the_servers_clock_is_left_out(serve):
    listing = lambda method, path, body: (200, {}, {"data": [{"id": "m", "created": int(time.time())}]})
    fp = OpenAIAgent("m", serve(listing).url).fingerprint()
    assert fp.endswith(':server={"id": "m"}')


def test_a_server_that_reports_nothing_gives_unreported(serve):
    fp = OpenAIAgent("m", serve(lambda method, path, body: (404, {}, {"error": "no"})).url).fingerprint()
    assert fp.endswith(':server="unreported"')
    fp = OpenAIAgent("m", serve(lambda method, path, body: (200, {}, {"data": [{"id": "x"}]})).url).fingerprint()
    assert fp.endswith(':server="unreported"')
    assert OpenAIAgent("m", "http://127.0.0.1:9/v1").fingerprint().endswith(':server="unreported"')


# --- the runner that does not wait in lockstep ------------------------------------------------------


class Independent:
    """The oracle, declared as answering turns independently, taking ``delay(turn)`` seconds per turn."""

    def __init__(self, concurrency, delay=lambda turn: 0.0, fail=lambda turn: False):
        self.inner, self.concurrency, self.delay, self.fail = OracleAgent(), concurrency, delay, fail
        self.batches, self.closed, self.lock = [], [], threading.Lock()

    def brief(self, episode_id, task):  # a reference agent's channel: its class must define brief
        self.inner.brief(episode_id, task)

    def fingerprint(self):
        return self.inner.fingerprint()

    def act(self, turns):
        with self.lock:
            self.batches.append(len(turns))
        time.sleep(self.delay(turns[0]))
        if self.fail(turns[0]):
            raise RuntimeError("boom")
        return self.inner.act(turns)

    def close(self, ids):
        with self.lock:
            self.closed.append((time.monotonic(), list(ids)))
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer(ids)


def test_the_independent_runner_gives_the_lockstep_runners_episodes():
    envs = lambda: [make_env("poi", t) for t in TASKS]
    lockstep = run_episodes(Independent(concurrency=1), envs())
    agent = Independent(concurrency=6)
    independent = run_episodes(agent, envs())
    assert set(agent.batches) == {1}
    assert [e.model_dump_json() for e in independent] == [e.model_dump_json() for e in lockstep]
    assert {e.outcome for e in lockstep} <= {"success", "refused"}


def test_the_independent_runner_does_not_wait_for_the_slowest():
    slow = user_query(make_env("poi", TASKS[0]).reset())
    first_turn_of_slow = lambda turn: 0.8 if user_query(turn.messages) == slow and len(turn.messages) <= 2 else 0.0
    agent = Independent(concurrency=8, delay=first_turn_of_slow)
    start = time.monotonic()
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS[:8]])
    times = [t - start for t, _ in agent.closed]
    assert len(times) == 8 and times == sorted(times)
    assert max(times[:7]) < 0.6 < times[7], times  # seven finished while the slow one waited for its reply
    assert all(len(e.steps) >= 1 for e in episodes)


def test_in_the_independent_runner_an_agent_that_raises_ends_only_its_episode():
    bad = user_query(make_env("poi", TASKS[3]).reset())
    agent = Independent(concurrency=4, fail=lambda turn: user_query(turn.messages) == bad)
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS[:8]])
    assert [e.outcome == "agent_error" for e in episodes] == [i == 3 for i in range(8)]
    assert "RuntimeError: boom" in episodes[3].steps[-1].error
    assert sum(len(ids) for _, ids in agent.closed) == 8


def test_the_runner_keeps_many_requests_in_flight_without_a_thread_each(serve):
    in_flight, peak, lock = [0], [0], threading.Lock()

    def respond(method, path, body):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.2)
        with lock:
            in_flight[0] -= 1
        return 200, {}, answer()

    server = serve(respond)
    ours = lambda: [t for t in threading.enumerate() if "process_request" not in t.name]  # not the server's
    agent = OpenAIAgent("m", server.url, concurrency=64, adaptive=False)
    agent.fingerprint()
    before = len(ours())
    seen = []
    episodes = run_episodes(agent, [make_env("poi", t) for t in TASKS], on_end=lambda i, e: seen.append(len(ours())))
    assert len(episodes) == len(TASKS) and "agent_error" not in {e.outcome for e in episodes}
    assert peak[0] == len(TASKS)  # every episode's request was in flight at once
    assert max(seen) <= before + 1, (before, seen)  # on the one event loop's thread, not a thread each


def test_a_dead_server_is_an_agent_failure_that_names_the_connection_error():
    from sandbox.errors import OpenAgentError
    from sandbox.evaluation import evaluate

    agent = OpenAIAgent("m", "http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(OpenAgentError, match=r"failed on 16 of 16 episodes .* request failed: .*127\.0\.0\.1:9"):
        evaluate(agent, tiers=1, n=8, cache_dir=None)
