"""The bfcl domain: BFCL multi-turn over the bfcl-eval wheel's backends (skipped without the wheel)."""

from __future__ import annotations

import json
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
    from sandbox.domains import make_env

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


def test_a_call_that_changes_the_backends_state_is_noted_as_a_write(bfcl):
    env = _env(bfcl, "multi_turn_base_0")
    env.reset()
    env.call("ls", {})
    env.call("cd", {"folder": "document"})
    assert env.state.writes == []  # a read, and a move that changes no public state
    assert env.call("mkdir", {"dir_name": "fresh"}).ok
    env.call("mkdir", {"dir_name": "fresh"})  # exists already: the state stays as it was
    assert [(w.tool, w.args) for w in env.state.writes] == [("mkdir", {"dir_name": "fresh"})]


def test_the_gold_plan_replays_on_the_tasks_own_backends_turn_by_turn(bfcl):
    from sandbox.gold_plan import gold_results, gold_writes, writes

    [task] = [t for t in bfcl.tasks(category="multi_turn_miss_func") if t.id == "multi_turn_miss_func_0"]
    results = gold_results(bfcl, task)  # sort is held back until turn 3: it runs there
    assert [r.error for r in results.values()] == [None] * len(task.plan)
    assert sorted(gold_writes(bfcl, task)) == ["t0.1", "t0.2", "t4.1"]  # mkdir, mv, mv
    assert writes(bfcl, task) == {"mkdir", "mv"}


def test_missing_values_leaves_a_writes_answer_whole(bfcl):
    # blanked, a write's answer would send an agent to make it again (a second booking, a second post)
    from sandbox.perturbations.registry import get

    env = get("missing_values")(severity=3).apply(_env(bfcl, "multi_turn_base_70"))
    env.reset()
    assert "frontLeftTirePressure" not in env.call("check_tire_pressure", {}).content
    assert env.call("fillFuelTank", {"fuelAmount": 10}).content == {"fuelLevel": 20.0}


def test_a_tool_list_built_again_in_an_episode_serves_another_task_whole(bfcl):
    # rate_limit's routes are shared by tool list; miss_func_0 builds them again when sort comes, for the list a
    # task of the same backends shows from the start: that task must get the wait tool's name with them
    from sandbox.domains import make_env
    from sandbox.perturbations.registry import get

    spec = get("rate_limit")(severity=1, seed=880_001)
    first = spec.apply(_env(bfcl, "multi_turn_miss_func_0"))
    first.reset()
    first.tool_specs()
    while first.next_user_message() is not None:
        first.tool_specs()
    classes = bfcl.entry("multi_turn_miss_func_0").classes
    twin = next(t for t in bfcl.tasks(category="multi_turn_base") if bfcl.entry(t.id).classes == classes)
    second = spec.apply(make_env(bfcl, twin))
    second.reset()
    assert "Wait" in second.call("pwd", {}).message


@pytest.mark.parametrize(("task_id", "applies"), [("multi_turn_base_57", True), ("multi_turn_base_5", False)])
def test_merge_and_inversion_apply_to_a_lookup_of_the_same_turn_not_to_a_writes_id(bfcl, task_id, applies):
    # multi_turn_base_57: estimate_distance takes the zipcode a lookup of its turn returned; multi_turn_base_5:
    # comment takes the id post_tweet (a write) returned, a turn before
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import Case, run_cases
    from sandbox.perturbations.registry import get

    [task] = [t for t in bfcl.tasks(category="multi_turn_base") if t.id == task_id]
    specs = [get("dependency_merge")(), get("logic_inversion")()]
    assert [s.applies_to(task) for s in specs] == [applies, applies]
    if applies:
        episodes = run_cases(OracleAgent(), [Case(task, (s,)) for s in specs])
        assert [e.explain() for e in episodes if not e.success] == []


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
    from sandbox.domains import make_env

    tasks = bfcl.tasks(category="multi_turn_base")
    episodes = run_episodes(_replayer(), [make_env(bfcl, t) for t in tasks])
    failed = [(e.task.id, e.explain()) for e in episodes if e.outcome != "success"]
    assert failed == []


KNOWN_BROKEN = {"multi_turn_miss_func_49"}
"""Its gold plan calls ``tail`` in turn 2, a function BFCL holds back until turn 4."""


def _sampler():
    """``benchmarks/bfcl_oracle.py``, whose fixed sample docs/bfcl.md reports."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bfcl_oracle.py"
    spec = importlib.util.spec_from_file_location("bfcl_oracle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sample_leaves_out_the_known_broken_task():
    assert set(_sampler().LEFT_OUT) == KNOWN_BROKEN


@pytest.mark.parametrize("category", ["multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"])
def test_the_replayer_succeeds_on_the_other_categories(bfcl, category):
    from sandbox.domains import make_env

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
    from sandbox.domains import make_env

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
             for s in cls.severities()
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
    from sandbox.domains import get_domain, make_env

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
             for s in cls.severities()
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


def _case(bfcl, task_id, name, severity, seed=0):
    from sandbox.case import Case
    from sandbox.perturbations.registry import get

    category = task_id.rsplit("_", 1)[0]
    [task] = [t for t in bfcl.tasks(category=category) if t.id == task_id]
    return Case(task, (get(name)(severity=severity, seed=seed),))


def _oracle_outcomes(cases):
    from sandbox.agents.oracle import OracleAgent
    from sandbox.case import run_cases

    episodes = run_cases(OracleAgent(), cases)
    return [(c.describe(), e.explain()) for c, e in zip(cases, episodes, strict=True) if not e.success]


# --- renamed tools in prose ------------------------------------------------------------------------


def test_a_tool_name_that_is_a_plain_word_is_renamed_only_where_it_stands_as_code():
    from sandbox.perturbations.wrappers import mentions

    pattern = mentions(["add", "get_weather"])
    rename = lambda text: pattern.sub(lambda m: f"<{m.group(m.lastindex)}>", text)
    assert rename("the fuel to add to the tank") == "the fuel to add to the tank"
    assert rename("MathAPI.add() missing 'b'; see 'add'") == "MathAPI.<add>() missing 'b'; see '<add>'"
    assert rename("call get_weather first") == "call <get_weather> first"


def test_erased_names_leave_the_words_of_descriptions_alone(bfcl):
    # fillFuelTank's fuelAmount is "the additional fuel to add to the tank", MathAPI's logarithm "Compute the
    # logarithm of a number": renaming add and logarithm there made them name other tools (and the oracle call one)
    env = _case(bfcl, "multi_turn_base_59", "identity_erasure", 1).env()
    env.reset()
    texts = json.dumps(env.tool_specs())
    assert "fuel to add to the tank" in texts and "Compute the logarithm of a number" in texts
    assert _oracle_outcomes([_case(bfcl, "multi_turn_base_59", "identity_erasure", 1)]) == []


@pytest.mark.parametrize(
    ("task_id", "name", "severity"),
    [("multi_turn_base_134", "identity_erasure", 1), ("multi_turn_miss_param_81", "identity_erasure", 1),
     ("multi_turn_base_134", "tool_name_noise", 3), ("multi_turn_base_81", "tool_name_noise", 2),
     ("multi_turn_long_context_59", "semantic_renaming", 2), ("multi_turn_base_59", "distractor_tools", 3)],
)  # fmt: skip
def test_the_oracle_solves_renamed_tools_whose_descriptions_use_other_tools_names_as_words(
    bfcl, task_id, name, severity
):
    assert _oracle_outcomes([_case(bfcl, task_id, name, severity)]) == []


# --- tools documented alike ------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "severity"), [("identity_erasure", 1), ("tool_name_noise", 3), ("semantic_trap", 2)])
def test_the_oracle_tries_the_twin_of_a_tool_documented_alike_that_answers_an_error(bfcl, name, severity):
    # the two outside-temperature lookups are documented alike; one answers {"error": 404}; without their names
    # only trying tells them apart
    cases = [_case(bfcl, "multi_turn_base_91", name, severity, seed) for seed in range(4)]
    assert _oracle_outcomes(cases) == []


def test_the_oracle_tells_a_swapped_tool_by_its_whole_description(bfcl):
    # "Get account information" keeps every word of its clean description in get_watchlist's too (the
    # class's preamble holds them): the name no longer decides, the description as a whole does
    from sandbox.agents.oracle.tools import clean_words, param_text, toolset

    task = _case(bfcl, "multi_turn_miss_func_127", "semantic_trap", 1).task
    specs = [s for s in (t.spec for t in bfcl.tools_for(task))]
    swap = {"get_watchlist": "get_account_info", "get_account_info": "get_watchlist"}
    shown = [{**s, "function": {**s["function"], "name": swap.get(s["function"]["name"], s["function"]["name"])}}
             for s in specs]  # fmt: skip
    described = tuple((s["function"]["name"], s["function"]["description"]) for s in shown)
    _, found = toolset(described, "bfcl", tuple(map(param_text, shown)), clean_words("bfcl", task))
    assert found["get_watchlist"] == "get_account_info" and found["get_account_info"] == "get_watchlist"


# --- feedback that costs steps -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "severity"), [("runtime_error", 3), ("rate_limit", 1), ("rate_limit", 2), ("tool_redirection", 1),
                           ("tool_redirection", 2)]
)  # fmt: skip
def test_the_oracle_batches_a_long_run_again_after_a_failed_call(bfcl, name, severity):
    # multi_turn_long_context_38: cd, 31 rm, ...; after the injected failure it went one call a step
    assert _oracle_outcomes([_case(bfcl, "multi_turn_long_context_38", name, severity)]) == []


def test_the_oracle_sends_a_call_alone_until_one_succeeded(bfcl):
    # multi_turn_base_35 opens with cd projects, cd deep_folder: sent together, the first failed (injected) and
    # the second ran from the root
    assert _oracle_outcomes([_case(bfcl, "multi_turn_base_35", "runtime_error", 1, seed=309)]) == []


def test_the_oracle_calls_a_documented_successor_directly(bfcl):
    # every tool moved: one extra step per tool of a six-call turn passed the step limit
    from sandbox.agents.oracle import OracleAgent

    episode = _case(bfcl, "multi_turn_miss_param_65", "tool_redirection", 2).run(OracleAgent())
    assert episode.success, episode.explain()
    assert not any(r.error == "moved" for step in episode.steps for r in step.results), episode.explain()


# --- names stable across an episode --------------------------------------------------------------------

TOOL_LIST = ("tool_name_noise", "semantic_renaming", "identity_erasure", "semantic_trap", "distractor_tools",
             "schema_noise", "description_rewrite", "tool_redirection", "rate_limit", "dependency_split",
             "argument_restructuring")  # fmt: skip


@pytest.mark.parametrize("name", TOOL_LIST)
def test_a_tool_keeps_its_name_and_spec_when_held_back_functions_are_released(bfcl, name):
    from sandbox.perturbations.registry import get

    cls = get(name)
    ids = ["multi_turn_miss_func_0", "multi_turn_miss_func_3", "multi_turn_miss_func_41", "multi_turn_miss_func_127"]
    changed = []
    for task_id in ids:
        for severity in cls.severities():
            for seed in range(3):
                case = _case(bfcl, task_id, name, severity, seed)
                if not case.perturbations[0].applies_to(case.task):
                    continue
                env = case.env()
                env.reset()
                seen: dict[str, str] = {}
                for turn in range(len(bfcl.entry(task_id).turns)):
                    if turn:
                        env.next_user_message()
                    now = {s["function"]["name"]: json.dumps(s, sort_keys=True) for s in env.tool_specs()}
                    changed += [(case.describe(), n, turn) for n, spec in seen.items() if now.get(n) != spec]
                    seen.update(now)
    assert changed == []


@pytest.mark.parametrize("category", CATEGORIES)
def test_the_oracle_solves_the_fixed_sample_of_each_category(bfcl, category):
    # the sample docs/bfcl.md reports (python benchmarks/bfcl_oracle.py --n 100 --seed 0)
    assert _oracle_outcomes(_sampler().draw(category, 100, seed=0)) == []


def test_a_run_of_all_tiers_says_which_it_skipped(bfcl, capsys):
    from pytest_openagent.cli import main

    assert main(["eval", "--agent", "oracle", "--domain", "bfcl", "--n", "1", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "skipped: internalization (no perturbation of it applies to bfcl's tasks)" in out, out
