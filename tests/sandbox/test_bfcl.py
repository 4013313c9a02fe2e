"""The bfcl domain: BFCL multi-turn over the bfcl-eval wheel's backends (skipped without the wheel)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandbox.domains.bfcl.calls import parse_call
from sandbox.episode import run_episode, run_episodes


@pytest.fixture(scope="module")
def bfcl():
    install = "pip install mpmath && pip install --no-deps bfcl-eval==2026.3.23"
    pytest.importorskip("bfcl_eval", reason=f"needs bfcl-eval: {install}")
    pytest.importorskip("mpmath", reason=f"needs mpmath: {install}")
    from sandbox.domains import get_domain

    return get_domain("bfcl")


def _env(bfcl, task_id):
    from sandbox.env import make_env

    category = task_id.rsplit("_", 1)[0]
    [task] = [t for t in bfcl.tasks(category=category) if t.id == task_id]
    return make_env(bfcl, task)


def _replayer():
    from sandbox.domains.bfcl.replayer import GoldReplayer

    return GoldReplayer()


# --- gold calls, read with ast -------------------------------------------------------------------


def test_parse_keyword_call():
    call = parse_call("mv(source='final_report.pdf', destination='temp')")
    assert (call.name, call.args, call.kwargs) == ("mv", (), {"source": "final_report.pdf", "destination": "temp"})


def test_parse_nested_literals_and_negative_numbers():
    call = parse_call("f(xs=[1, -2.5, [3, {'k': (4, None)}]], d={'a': {'b': [True, False]}}, n=-7)")
    assert call.kwargs == {"xs": [1, -2.5, [3, {"k": (4, None)}]], "d": {"a": {"b": [True, False]}}, "n": -7}


def test_parse_positional_arguments_are_named_from_the_signature():
    def sort(self, file_name: str, *, reverse: bool = False) -> None: ...

    call = parse_call("sort('final_report.pdf', reverse=True)")
    assert call.args == ("final_report.pdf",)
    assert call.keywords(sort) == {"file_name": "final_report.pdf", "reverse": True}


@pytest.mark.parametrize(
    "text",
    ["__import__('os').system('true')", "cd(folder=os.getcwd())", "a.b(x=1)", "cd(folder='a' + 'b')", "cd(**d)",
     "cd(folder='x'); rm(x=1)", "not a call", "cd"],
)  # fmt: skip
def test_parse_refuses_what_is_not_a_literal_call(text):
    with pytest.raises(ValueError, match=r"call|literal|args"):
        parse_call(text)


def test_every_gold_call_of_the_four_categories_parses(bfcl):
    from sandbox.domains.bfcl.data import CATEGORIES

    assert sum(len(bfcl.tasks(category=c)) for c in CATEGORIES) == 800  # parsing happens while loading


# --- the domain and its envs -------------------------------------------------------------------------


def test_import_sandbox_does_not_import_bfcl():
    loaded = "[m for m in sys.modules if m.startswith(('bfcl_eval', 'sandbox.domains.bfcl'))]"
    code = f"import sys, sandbox; assert not {loaded}, {loaded}"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_loading_sets_a_project_root_outside_site_packages(bfcl):
    import os

    _env(bfcl, "multi_turn_base_0").reset()
    assert "site-packages" not in os.environ["BFCL_PROJECT_ROOT"]


def test_tasks_are_bfcls(bfcl):
    tasks = bfcl.tasks(category="multi_turn_base")
    assert len(tasks) == 200 and tasks[0].id == "multi_turn_base_0"
    assert [c.id for c in tasks[0].plan[:3]] == ["t0.0", "t0.1", "t0.2"]
    assert bfcl.tasks("train") == []
    from sandbox.errors import UnknownName

    with pytest.raises(UnknownName, match="multi_turn_base"):
        bfcl.tasks(category="multi_turn_bass")


def test_tool_specs_are_chat_template_specs_of_the_involved_classes(bfcl):
    env = _env(bfcl, "multi_turn_base_0")
    env.reset()
    specs = env.tool_specs()
    names = {s["function"]["name"] for s in specs}
    assert {"cd", "mkdir", "post_tweet"} <= names and "get_stock_info" not in names
    for spec in specs:
        assert spec["type"] == "function" and spec["function"]["parameters"]["type"] == "object"
        for prop in spec["function"]["parameters"]["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "boolean", "array", "object"}


def test_two_episodes_of_one_task_share_no_file_system(bfcl):
    first, second = _env(bfcl, "multi_turn_base_0"), _env(bfcl, "multi_turn_base_0")
    first.reset()
    second.reset()
    assert first.call("cd", {"folder": "document"}).ok
    assert first.call("mkdir", {"dir_name": "fresh"}).ok
    assert "fresh" in first.call("ls", {}).render()
    assert "fresh" not in second.call("ls", {"a": True}).render()
    first.reset()  # a reset starts the same env afresh too
    first.call("cd", {"folder": "document"})
    assert "fresh" not in first.call("ls", {}).render()


def test_bad_calls_are_observations(bfcl):
    env = _env(bfcl, "multi_turn_base_0")
    env.reset()
    assert env.call("no_such_tool", {}).error == "unknown_tool"
    assert env.call("cd", ["document"]).error == "invalid_arguments"
    assert env.call("cd", {"directory": "document"}).error == "invalid_arguments"


def test_held_back_functions_come_with_their_turn(bfcl):
    env = _env(bfcl, "multi_turn_miss_func_0")  # sort is held back until turn 3
    env.reset()
    assert "sort" not in {s["function"]["name"] for s in env.tool_specs()}
    assert env.call("sort", {"file_name": "x"}).error == "unknown_tool"
    for _ in range(3):
        message = env.next_user_message()
    assert "updated some more functions" in message
    assert "sort" in {s["function"]["name"] for s in env.tool_specs()}


# --- episodes -------------------------------------------------------------------------------------


def test_the_replayer_succeeds_on_every_multi_turn_base_task(bfcl):
    from sandbox.env import make_env

    tasks = bfcl.tasks(category="multi_turn_base")
    episodes = run_episodes(_replayer(), [make_env(bfcl, t) for t in tasks])
    failed = [(e.task.id, e.explain()) for e in episodes if e.outcome != "success"]
    assert failed == []


KNOWN_BROKEN = {"multi_turn_miss_func_49"}
"""Its gold plan calls ``tail`` in turn 2, a function BFCL holds back until turn 4."""


@pytest.mark.parametrize("category", ["multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"])
def test_the_replayer_succeeds_on_the_other_categories(bfcl, category):
    from sandbox.env import make_env

    tasks = [t for t in bfcl.tasks(category=category) if t.id not in KNOWN_BROKEN]
    episodes = run_episodes(_replayer(), [make_env(bfcl, t) for t in tasks])
    assert [e.task.id for e in episodes if e.outcome != "success"] == []


def test_a_multi_turn_episode_goes_through_every_user_turn(bfcl):
    env = _env(bfcl, "multi_turn_miss_param_0")
    episode = run_episode(_replayer(), env)
    users = [m["content"] for m in episode.messages if m["role"] == "user"]
    assert users == list(env.entry.turns) and len(users) == 5
    assert episode.outcome == "success"


def test_an_agent_that_does_nothing_fails_with_the_reason(bfcl):
    episode = run_episode(lambda messages, tools: "Done.", _env(bfcl, "multi_turn_base_0"))
    assert episode.outcome == "wrong_answer"
    assert "turn 1: no function call" in episode.explain()


def test_an_agent_with_a_wrong_call_fails_the_state_check(bfcl):
    from sandbox.agent import Reply

    def wrong(messages, tools):
        if messages[-1]["role"] != "user":
            return "Done."
        return Reply(tool_calls=[{"function": {"name": "mkdir", "arguments": {"dir_name": "elsewhere"}}}])

    episode = run_episode(wrong, _env(bfcl, "multi_turn_base_0"))
    assert episode.outcome == "wrong_answer"
    assert "turn 1: state of GorillaFileSystem.root differs" in episode.explain()


def test_an_agent_calling_unknown_tools_fails_as_invalid_tool(bfcl):
    from sandbox.agent import Reply

    def lost(messages, tools):
        if messages[-1]["role"] != "user":
            return "Done."
        return Reply(tool_calls=[{"function": {"name": "make_directory", "arguments": {"name": "temp"}}}])

    assert run_episode(lost, _env(bfcl, "multi_turn_base_0")).outcome == "invalid_tool"


def test_the_step_limit_counts_per_user_turn(bfcl):
    # the replayer takes 2 steps a turn (its calls, then its answer): 8 steps in all on a 4-turn task
    episode = run_episode(_replayer(), _env(bfcl, "multi_turn_base_0"), max_steps=2)
    assert episode.outcome == "success" and len(episode.steps) == 8


def test_a_wrapper_passes_the_turns_and_the_verdict_through(bfcl):
    from sandbox.env import Wrapper

    env = _env(bfcl, "multi_turn_base_0")
    episode = run_episode(_replayer(), Wrapper(env))
    assert episode.outcome == "success" and sum(m["role"] == "user" for m in episode.messages) == len(env.entry.turns)


# --- the oracle -----------------------------------------------------------------------------------


def test_the_oracle_succeeds_on_every_multi_turn_base_task(bfcl):
    from sandbox.agents.oracle import OracleAgent
    from sandbox.env import make_env

    tasks = bfcl.tasks(category="multi_turn_base")
    episodes = run_episodes(OracleAgent(), [make_env(bfcl, t) for t in tasks])
    assert [(e.task.id, e.explain()) for e in episodes if e.outcome != "success"] == []


def _per_backend(bfcl, n=2):
    """The first ``n`` multi_turn_base tasks that use each of the eight backends (fewer where tasks repeat)."""
    from sandbox.domains.bfcl.backends import BACKENDS

    tasks = bfcl.tasks(category="multi_turn_base")
    chosen = {t.id: t for b in BACKENDS for t in [t for t in tasks if b in bfcl.entry(t.id).classes][:n]}
    return list(chosen.values())


def test_the_oracle_solves_every_applied_solvable_perturbation_of_two_tasks_per_backend(bfcl):
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import Case, run_cases
    from sandbox.perturbations.registry import get, names

    tasks = _per_backend(bfcl)
    cases = [Case(t, (cls(severity=s),)) for cls in map(get, names()) if not cls.unsolvable
             for s in range(max(1, cls.min_severity), cls.max_severity + 1)
             for t in tasks if cls(severity=s).applies_to(t)]  # fmt: skip
    applied = {c.perturbations[0].name for c in cases}
    assert {"tool_name_noise", "schema_noise", "runtime_error", "dependency_split"} <= applied
    episodes = run_cases(OracleAgent(), cases)
    failed = [(c.describe(), e.explain()) for c, e in zip(cases, episodes, strict=True) if not e.success]
    assert failed == []


def test_unsolvable_perturbations_do_not_apply_to_bfcl_tasks(bfcl):
    from sandbox.perturbations.registry import get, names

    task = bfcl.tasks(category="multi_turn_base", n=1)[0]
    for cls in (get(n) for n in names() if get(n).unsolvable):
        assert not cls(severity=cls.max_severity).applies_to(task), cls.name
        assert "bfcl" in (cls.limits or ""), cls.name


def test_a_tasks_clean_tools_are_its_backends_functions(bfcl):
    from sandbox.domains import get_domain
    from sandbox.env import make_env

    task = bfcl.tasks(category="multi_turn_base", n=1)[0]
    shown = [s["function"]["name"] for s in make_env(bfcl, task).tool_specs()]
    assert [t.name for t in bfcl.tools_for(task)] == shown
    poi = get_domain("poi")
    assert poi.tools_for(poi.tasks("test", 1)[0]) is poi.tools  # a domain whose tasks share its tools


def test_a_tier_with_nothing_that_applies_is_left_out_of_all_tiers_and_an_error_by_name():
    from sandbox.evaluation import evaluate

    report = evaluate("oracle", n=2, domain="bfcl", cache_dir=None)
    assert {r.tier for r in report.records} == {"perception", "interaction", "reasoning"}
    with pytest.raises(ValueError, match="no perturbation of tier internalization applies"):
        evaluate("oracle", tiers=["internalization"], n=2, domain="bfcl", cache_dir=None)


CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


def _sample(bfcl, category, n=2):
    """The first ``n`` tasks of ``category`` that use each of the eight backends (less the known-broken)."""
    from sandbox.domains.bfcl.backends import BACKENDS

    tasks = [t for t in bfcl.tasks(category=category) if t.id not in KNOWN_BROKEN]
    return list({t.id: t for b in BACKENDS for t in [t for t in tasks if b in bfcl.entry(t.id).classes][:n]}.values())


@pytest.mark.parametrize("category", CATEGORIES)
def test_the_oracle_solves_every_applied_solvable_perturbation_of_each_category(bfcl, category):
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import Case, run_cases
    from sandbox.perturbations.registry import get, names

    tasks = _sample(bfcl, category)
    cases = [Case(t, (cls(severity=s),)) for cls in map(get, names()) if not cls.unsolvable
             for s in range(max(1, cls.min_severity), cls.max_severity + 1)
             for t in tasks if cls(severity=s).applies_to(t)]  # fmt: skip
    cases += [Case(t) for t in tasks]
    episodes = run_cases(OracleAgent(), cases)
    failed = [(c.describe(), e.explain()) for c, e in zip(cases, episodes, strict=True) if not e.success]
    assert failed == []


def test_the_oracle_sends_a_run_of_one_tools_calls_in_one_reply(bfcl):
    # multi_turn_long_context_46's first turn is cd, 31 rm, cd, rmdir: one call per reply passes the step limit
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import Case, run_cases
    from sandbox.perturbations.registry import get

    [task] = [t for t in bfcl.tasks(category="multi_turn_long_context") if t.id == "multi_turn_long_context_46"]
    cases = [Case(task), Case(task, (get("argument_restructuring")(severity=1),))]
    episodes = run_cases(OracleAgent(), cases)
    assert [(e.outcome, e.explain()) for e in episodes if not e.success] == []


def test_the_oracle_joins_camel_case_arguments(bfcl):
    # argument_restructuring joins estimate_distance's cityA and cityB as 'CITYA+CITYB'
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import Case
    from sandbox.perturbations.registry import get

    [task] = [t for t in bfcl.tasks(category="multi_turn_miss_func") if t.id == "multi_turn_miss_func_63"]
    episode = Case(task, (get("argument_restructuring")(severity=2),)).run(OracleAgent())
    assert episode.success, episode.explain()
