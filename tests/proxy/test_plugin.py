"""Model faults through the plugin, as a user meets them: a case that names them, drawn and shrunk by Hypothesis
for an ``openai:`` agent (``--openagent-agent``); the ``llm_proxy`` fixture pointing a client at a proxy."""

from __future__ import annotations

import pytest

import sandbox
from tests.proxy.upstream import MODEL, OracleServer

pytest_plugins = ["pytester"]
pytest.importorskip("starlette", reason="needs the mcp extra (starlette, uvicorn)")


@pytest.fixture(scope="module")
def server():
    server = OracleServer()
    server.brief(list(sandbox.tasks("poi", "test")))
    yield server
    server.close()


def test_a_failure_under_model_faults_shrinks_to_one_mild_fault(pytester, server):
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.makepyfile(test_model="""
        import pytest_openagent as openagent

        @openagent.perturb(names=["model_false_success", "model_rate_limited"], max_stack=2, max_examples=15)
        def test_survives(case, agent):
            episode = case.run(agent)
            assert episode.success, episode.explain()
    """)  # fmt: skip
    result = pytester.runpytest("--openagent-agent", f"openai:{MODEL}@{server.url}")
    result.assert_outcomes(failed=1)
    shrunk = [line for line in result.stdout.lines if "case=Case(" in line]
    assert shrunk and all(" + " not in line and "model_false_success(s=1," in line for line in shrunk), shrunk
    assert not any("after=" in line for line in shrunk), "shrunk to a fault from the first turn"


def test_the_llm_proxy_fixture_serves_an_upstream_with_faults(pytester, server):
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.makepyfile(test_fixture=f"""
        import openai

        def test_refused(llm_proxy):
            url = llm_proxy({server.url!r}, "model_refusal:3")
            client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
            reply = client.chat.completions.create(model="oracle", messages=[{{"role": "user", "content": "hi"}}])
            assert reply.choices[0].message.refusal and url.startswith("http://127.0.0.1:")
    """)  # fmt: skip
    pytest.importorskip("openai", reason="needs the dev extra")
    pytester.runpytest().assert_outcomes(passed=1)
