"""A framework agent end to end against a real OpenAI-compatible server serving a model: a pydantic-ai agent,
its model the default base (SmolLM2-135M-Instruct) served by ``transformers serve``, its tools the adapter's,
in a perturbed case. What went over the wire is read from the HTTP client's requests."""

from __future__ import annotations

import json

import pytest

import sandbox
from sandbox.agents import EpisodeTools, LoopAgent
from sandbox.case import Case, run_cases
from sandbox.perturbations import registry
from training.serving import transformers_server

pytestmark = pytest.mark.slow

for _module, _extra in (("torch", "train"), ("fastapi", "dev"), ("uvicorn", "dev"), ("openai", "dev"),
                        ("pydantic_ai", "pydantic-ai")):  # fmt: skip
    pytest.importorskip(_module, reason=f"needs the {_extra} extra")


@pytest.fixture(scope="module")
def base():
    from training.inference.base import BaseModelUnavailable, prepare_default_base

    try:
        return prepare_default_base(quiet=True)
    except BaseModelUnavailable as exc:
        pytest.skip(str(exc))


def test_a_pydantic_ai_agent_plays_a_perturbed_case_against_a_served_model(base):
    import httpx2
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from sandbox.agents.frameworks import pydantic_ai_toolset

    offered: list[list[str]] = []

    async def record(request: httpx2.Request) -> None:
        body = json.loads(request.content)
        offered.append([tool["function"]["name"] for tool in body.get("tools", [])])

    assistant = Agent(instructions="Use the tools to do what the user asks. Answer briefly.")

    def run(request: str, tools: EpisodeTools) -> str:
        client = httpx2.AsyncClient(event_hooks={"request": [record]}, timeout=900)
        model = OpenAIChatModel(str(base), provider=OpenAIProvider(base_url=url, api_key="none", http_client=client))
        settings = {"max_tokens": 32, "temperature": 0.0}
        return assistant.run_sync(request, model=model, toolsets=[pydantic_ai_toolset(tools)],
                                  model_settings=settings).output  # fmt: skip

    case = Case(sandbox.tasks("poi", "test", n=1)[0], (registry.create("tool_name_noise", severity=2),))
    env = case.env()
    env.reset()
    perturbed = [spec["function"]["name"] for spec in env.tool_specs()]
    with transformers_server(base, wait=600) as url:
        [episode] = run_cases(LoopAgent(run, name="pydantic-ai-smollm2", timeout=900), [case])
    assert episode.outcome in sandbox.OUTCOMES and episode.outcome != "agent_error", episode.explain()
    assert offered and all(names == perturbed for names in offered), (offered, perturbed)
    assert episode.steps[-1].reply, "the model's own answer ended the episode"
