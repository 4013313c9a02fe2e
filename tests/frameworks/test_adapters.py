"""Framework agents through the adapters, driven by each framework's scripted test model: the oracle's moves
replayed through each adapter solve perturbed cases; a brittle agent (the static baseline's moves) breaks under a
rename and its failure shrinks to one perturbation; each adapter shows the episode's tools as perturbed and
follows a tool list that changes (where its framework can)."""

from __future__ import annotations

import importlib.util

import pytest

import sandbox
from sandbox.agent import Turn
from sandbox.agents import OracleAgent, StaticAgent
from sandbox.agents.frameworks.played import EXTRAS, FRAMEWORKS, MODULES, played_through
from sandbox.agents.loop import EpisodeTools
from sandbox.agents.session import LoopSession
from sandbox.case import Case, run_cases
from sandbox.perturbations import registry
from tests import toys

pytest_plugins = ["pytester"]


def _framework(name: str) -> str:
    if MODULES[name] is not None and importlib.util.find_spec(MODULES[name]) is None:
        pytest.skip(f"needs the {EXTRAS[name]} extra: pip install 'pytest-openagent[{EXTRAS[name]}]'")
    return name


@pytest.fixture(params=list(FRAMEWORKS))
def framework(request: pytest.FixtureRequest) -> str:
    return _framework(request.param)


PERTURBED = ("tool_name_noise", "semantic_renaming", "description_rewrite", "schema_noise", "runtime_error")


def test_the_oracles_moves_through_the_adapter_solve_perturbed_cases(framework):
    tasks = sandbox.tasks("poi", "test", n=2, seed=1)
    specs = [registry.create(name, severity=registry.get(name).max_severity, seed=3) for name in PERTURBED]
    cases = [Case(t) for t in tasks] + [Case(t, (s,)) for t in tasks for s in specs if s.applies_to(t)]
    episodes = run_cases(played_through(framework, OracleAgent()), cases)
    assert [f"{c.describe()}: {e.outcome}" for c, e in zip(cases, episodes, strict=True) if not e.success] == []
    renamed = next(e for c, e in zip(cases, episodes, strict=True) if "tool_name_noise" in c.describe())
    clean = {t.name for t in sandbox.get_domain("poi").tools}
    called = {call.name for step in renamed.steps for call in step.calls}
    assert called and not called & clean, "the calls went through the env under the perturbed names"


def test_a_brittle_framework_agent_breaks_on_a_rename(framework):
    task = sandbox.tasks("poi", "test", n=1, seed=0)[0]
    renamed = registry.create("tool_name_noise", severity=2)
    brittle = played_through(framework, StaticAgent())
    clean, perturbed = run_cases(brittle, [Case(task), Case(task, (renamed,))])
    assert clean.success, clean.explain()
    assert not perturbed.success and perturbed.outcome in sandbox.OUTCOMES


def test_the_brittle_agents_failure_shrinks_to_one_perturbation(pytester, framework):
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    pytester.makepyfile(test_framework=f"""
        import pytest_openagent as openagent
        from sandbox.agents import StaticAgent
        from sandbox.agents.frameworks.played import played_through

        AGENT = played_through({framework!r}, StaticAgent())

        @openagent.perturb(names=["description_rewrite", "tool_name_noise"], max_stack=2, max_examples=15)
        def test_survives(case):
            episode = case.run(AGENT)
            assert episode.success, episode.explain()
    """)  # fmt: skip
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    shrunk = [line for line in result.stdout.lines if "case=Case(" in line]
    assert shrunk and all(" + " not in line and "tool_name_noise(" in line for line in shrunk), shrunk


def _session(specs):
    turn = Turn("ep-test", [{"role": "user", "content": "hi"}], specs)
    return LoopSession(lambda request: "", turn, "test")


def _perturbed_specs():
    perturbations = (registry.create("tool_name_noise", severity=2), registry.create("description_rewrite", severity=1))
    env = Case(sandbox.tasks("poi", "test", n=1)[0], perturbations).env()
    env.reset()
    return env.tool_specs()


def _shown(framework: str, tools: EpisodeTools) -> list[tuple[str, str, dict]]:
    """(name, description, JSON schema) of each tool as the framework will show its model."""
    from sandbox.agents import frameworks

    if framework == "langgraph":
        from langchain_core.utils.function_calling import convert_to_openai_tool

        shown = [convert_to_openai_tool(t)["function"] for t in frameworks.langchain_tools(tools)]
        return [(f["name"], f["description"], f["parameters"]) for f in shown]
    if framework == "pydantic-ai":
        toolset = frameworks.pydantic_ai_toolset(tools).toolset_func(None)
        return [(t.name, t.tool_def.description, t.tool_def.parameters_json_schema) for t in toolset.tools.values()]
    return [(t.name, t.description, t.params_json_schema) for t in frameworks.openai_agents_tools(tools)]


@pytest.mark.parametrize("name", [f for f in FRAMEWORKS if MODULES[f] is not None])
def test_each_adapter_shows_the_tools_as_perturbed(name):
    framework = _framework(name)
    specs = _perturbed_specs()
    tools = EpisodeTools("ep-test", _session(specs))
    expected = [(s["function"]["name"], s["function"]["description"], s["function"]["parameters"]) for s in specs]
    assert _shown(framework, tools) == expected
    assert {name for name, _, _ in expected}.isdisjoint({t.name for t in sandbox.get_domain("poi").tools})


@pytest.mark.parametrize("name", ["pydantic-ai", "openai-agents"])
def test_a_changed_tool_list_reaches_the_framework_at_its_next_step(name):
    _framework(name)
    from sandbox.agents import frameworks

    clean = sandbox.get_domain("poi").toolbox.specs()
    session = _session(clean)
    tools = EpisodeTools("ep-test", session)
    session.on_tools = tools.refresh
    if name == "pydantic-ai":
        toolset = frameworks.pydantic_ai_toolset(tools)
        before = set(toolset.toolset_func(None).tools)
        session.deliver(Turn("ep-test", [{"role": "tool", "content": "{}"}], _perturbed_specs()))
        after = set(toolset.toolset_func(None).tools)
    else:
        listed = frameworks.openai_agents_tools(tools)
        before = {t.name for t in listed}
        session.deliver(Turn("ep-test", [{"role": "tool", "content": "{}"}], _perturbed_specs()))
        after = {t.name for t in listed}
    assert before == {s["function"]["name"] for s in clean}
    assert after == {s["function"]["name"] for s in _perturbed_specs()} and after != before


@pytest.mark.parametrize("name", ["python", "pydantic-ai", "openai-agents"])
def test_the_oracles_moves_follow_a_tool_list_that_changes_mid_episode(name):
    """LangGraph binds its tools once: drift is not applicable there (docs/frameworks.md)."""
    _framework(name)
    tasks = [t for t in sandbox.tasks("poi", "test", n=8, seed=0) if t.n_calls >= 2][:3]
    drift = registry.create("tool_name_noise", severity=2, after=1)
    episodes = run_cases(played_through(name, OracleAgent()), [Case(t, (drift,)) for t in tasks])
    assert [e.outcome for e in episodes] == ["success"] * len(tasks), [e.explain() for e in episodes]
    clean = {t.name for t in sandbox.get_domain("poi").tools}
    for episode in episodes:
        called = [call.name for step in episode.steps for call in step.calls]
        assert called[0] in clean and called[-1] not in clean, "the first call before the onset, the last after"


def test_each_user_turn_of_a_task_of_several_is_a_run_that_keeps_the_history(framework):
    """BFCL multi-turn: the loop runs once per user turn, and the framework's history carries the earlier ones."""
    pytest.importorskip("bfcl_eval", reason="needs bfcl-eval: pip install mpmath && pip install --no-deps bfcl-eval")
    pytest.importorskip("mpmath", reason="needs mpmath (the bfcl extra)")
    from sandbox.domains import get_domain

    tasks = [t for t in get_domain("bfcl").tasks("test") if len(t.waves()) >= 2][:1]
    episodes = run_cases(played_through(framework, OracleAgent()), [Case(t) for t in tasks])
    assert [e.outcome for e in episodes] == ["success"] * len(tasks), [e.explain() for e in episodes]
    for episode in episodes:
        users = [m for m in episode.messages if m["role"] == "user"]
        assert len(users) >= 2 and sum(not s.calls for s in episode.steps) == len(users), "an answer per user turn"
