"""The ``openai:`` agent end to end against a real OpenAI-compatible server: ``transformers serve``.

The server runs on loopback, serving a checkpoint our own code trained (a tiny model after a few
GRPO steps). Greedy replies through the server must be the replies the in-process model agent
gives for the same checkpoint: same chat template, same tools, same tokens.
"""

from __future__ import annotations

import json

import pytest

from training.serving import transformers_server

pytest.importorskip("torch")
pytest.importorskip("fastapi", reason="transformers serve needs fastapi and uvicorn (the dev extra)")
pytest.importorskip("uvicorn", reason="transformers serve needs fastapi and uvicorn (the dev extra)")

pytestmark = pytest.mark.slow
pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from training.rl import RLConfig, train
    from training.tiny import build_tiny_model

    tiny = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    cfg = RLConfig(
        out=str(tmp_path_factory.mktemp("rl")), init=str(tiny), tasks=8, steps=3, group=4, tasks_per_step=2,
        max_new_tokens=8, lr=1e-2, lora=False, warmup=1, progress=False, save_every=0, threads=1,
    )  # fmt: skip
    return train(cfg, reward=lambda episode: float(len(episode.steps[0].reply) < 20))


@pytest.fixture(scope="module")
def server(checkpoint):
    with transformers_server(checkpoint) as url:
        yield url


def test_the_openai_agent_gets_the_checkpoints_own_replies_from_transformers_serve(checkpoint, server):
    import sandbox
    from sandbox import make_env, run_episodes
    from sandbox.evaluation.specs import load_agent
    from training.inference.model_agent import HFAgent

    remote = load_agent(f"openai:{checkpoint}@{server}")
    remote.max_tokens = 16
    local = HFAgent(checkpoint, max_new_tokens=16, dtype="fp32")
    tasks = sandbox.tasks("poi", "test", 6)
    served = run_episodes(remote, [make_env("poi", t) for t in tasks])
    direct = run_episodes(local, [make_env("poi", t) for t in tasks])
    assert all(ep.outcome != "agent_error" for ep in served), [ep.steps[-1].error for ep in served]

    def text(reply: str) -> str:
        # A server decodes without special tokens; HFAgent keeps them (tool-call markers may be special), and a
        # random model can write one (<|im_start|>) mid-reply.
        for token in local.tokenizer.all_special_tokens:
            reply = reply.replace(token, "")
        return reply

    assert [ep.steps[0].reply for ep in served] == [text(ep.steps[0].reply) for ep in direct]
    plain = [i for i, ep in enumerate(direct) if text(ep.steps[0].reply) == ep.steps[0].reply]
    assert [served[i].outcome for i in plain] == [direct[i].outcome for i in plain]


SESSION_TEST = """
import pytest_openagent as openagent

@openagent.perturb(names=["tool_name_noise"], max_examples=1)
def test_agent(agent, case):
    episode = case.run(agent)
    assert episode.success, episode.explain()
"""


def test_a_pytest_session_tests_the_checkpoint_through_the_server(checkpoint, server, project):
    project.makepyfile(test_agent=SESSION_TEST)
    result = project.runpytest_subprocess(
        "--openagent-agent", f"openai:{checkpoint}@{server}", "--openagent-no-cache", "--openagent-n", "1",
        "--openagent-report", "report.json",
    )  # fmt: skip
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    report = json.loads((project.path / "report.json").read_text())
    outcomes = [record["outcome"] for record in report["records"]]
    assert outcomes and "agent_error" not in outcomes, outcomes  # every episode was the served model's replies
    assert report["meta"]["server"]["models"][0]["id"] == str(checkpoint)
