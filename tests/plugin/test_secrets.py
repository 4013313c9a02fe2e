"""An API key that a server echoes back never reaches pytest's output, the JSON report or the JUnit XML."""

from __future__ import annotations

import pytest

from sandbox.agents import http
from sandbox.redact import REDACTED, redact

pytest_plugins = ["pytester"]

KEY = "local-7f3a9c2e5b1d4a60"
"""Not ``sk-``-shaped: found because it is the configured key, not by its form."""

FAILING_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names=["toy_shout"], max_examples=2)
def test_agent(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""


@pytest.fixture
def echo(monkeypatch, serve):
    """A server that puts the request's ``Authorization`` in what it says: in a 500's body (with
    ``Retry-After: 0``, so the agent's retries take no time), and in its model listing."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAGENT_API_KEY", raising=False)

    def respond(method, path, body):
        authorization = server.current.headers.get("Authorization")
        if method == "GET":
            return 200, {}, {"object": "list", "data": [{"id": "m", "owned_by": authorization or ""}]}
        if server.failing:
            error = {"message": f"invalid key {KEY}", "headers": {"authorization": authorization}}
            return 500, {"Retry-After": "0"}, {"error": error}
        return 200, {}, {"choices": [{"message": {"role": "assistant", "content": "I cannot help with that."}}]}

    server = serve(respond)
    server.failing = True
    return server


def test_a_key_the_server_echoes_is_redacted_from_output_report_and_junit(project, echo):
    http.load()  # aiohttp loaded out here: pytester's in-process runs unload what they import
    project.makepyfile(test_agent=FAILING_TEST)
    options = ["--openagent-agent", f"openai:m@{echo.url}", "--openagent-no-cache",
               "--openagent-names", "toy_shout", "--openagent-n", "8", "--junitxml", "junit.xml",
               "--openagent-report", "report.json"]  # fmt: skip
    failed = project.runpytest(*options)
    out = failed.stdout.str()
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    assert "HTTP 500" in out and "no measurement: the agent failed" in out  # the server's body was shown
    xml = (project.path / "junit.xml").read_text()
    assert 'classname="openagent" name="gate"' in xml and "HTTP 500" in xml
    for text in (out, xml):
        assert KEY not in text and f"Bearer {REDACTED}" in text and f"invalid key {REDACTED}" in text

    echo.failing = False
    measured = project.runpytest(*options)
    assert measured.ret == pytest.ExitCode.TESTS_FAILED  # the agent answers, and refuses everything
    report = (project.path / "report.json").read_text()
    assert f"Bearer {REDACTED}" in report  # the server's account of the model is in the agent's fingerprint
    assert KEY not in report and KEY not in measured.stdout.str()
    assert KEY not in (project.path / "junit.xml").read_text()


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f'{{"authorization": "Bearer {KEY}"}}', f'{{"authorization": "Bearer {REDACTED}"}}'),
        ("authorization: bearer abc.DEF-123=", f"authorization: bearer {REDACTED}"),
        (f"key {KEY}!", f"key {REDACTED}!"),
        ("sk-proj-AbCdEf0123456789xyz leaked", f"{REDACTED} leaked"),
        ("a task-sk-like id: desk-lamp-with-a-long-name", "a task-sk-like id: desk-lamp-with-a-long-name"),
        ("nothing to hide", "nothing to hide"),
    ],
)
def test_redact_removes_the_configured_key_bearer_tokens_and_secret_keys(monkeypatch, text, redacted):
    monkeypatch.setenv("OPENAGENT_API_KEY", KEY)
    assert redact(text) == redacted


def test_a_short_configured_key_is_not_blanked_everywhere(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "the")
    monkeypatch.delenv("OPENAGENT_API_KEY", raising=False)
    assert redact("the server said no; Bearer the") == f"the server said no; Bearer {REDACTED}"
