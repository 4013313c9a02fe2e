"""The evolution operators (sandbox.perturbations.evolution): what each changes, the oracle right on drawn cases
(static and drift), failures shrinking to the mildest, and a release read off two snapshots."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from pytest_openagent.strategies import cases
from sandbox.agents import OracleAgent
from sandbox.agents.static import StaticAgent
from sandbox.audits.strength import sample_tasks
from sandbox.case import Case
from sandbox.domains import get_domain
from sandbox.evaluation.diff_test import diff_test
from sandbox.identifiers import fold, restyle, swapped
from sandbox.perturbations import create, names
from sandbox.perturbations.evolution import ReleaseDiff
from sandbox.perturbations.evolution.snapshot import derive, parse_snapshot

EVOLUTION = ["param_case_style", "param_added", "enum_widened", "tool_deprecated", "tool_split",
             "description_release", "result_field_renamed"]  # fmt: skip
ORACLE = OracleAgent()
STYLES = ("snake", "camel", "pascal", "kebab")
words = st.lists(st.from_regex(r"[a-z][a-z0-9]{1,6}", fullmatch=True), min_size=1, max_size=4)
"""Words of an identifier: two characters or more (a one-letter word in camelCase reads as an acronym)."""


def test_the_operators_are_in_the_catalogue_and_the_release_is_asked_for_by_name() -> None:
    assert set(EVOLUTION) <= set(names()) and "release_diff" not in names()
    assert create("release_diff").data == {}


@given(words, st.sampled_from(STYLES), st.sampled_from(STYLES))
def test_a_name_in_any_style_folds_to_the_same_words(parts, a, b) -> None:
    name = restyle("_".join(parts), a)
    assert fold(restyle(name, b)) == fold(name) == "".join(parts)
    snake = "_".join(parts)
    assert swapped(swapped(snake)) == snake


def _days(tool: str) -> list[str]:
    spec = next(t.spec for t in get_domain("poi").tools if t.name == tool)
    return spec["function"]["parameters"]["properties"]["day"]["enum"]


def _task(domain: str, tool: str):
    return next(t for t in get_domain(domain).tasks("test") if any(c.tool == tool for c in t.plan))


def _env(name: str, task, **params):
    env = Case(task, (create(name, **params),)).env()
    env.reset()
    return env


def test_a_parameter_renamed_by_case_style_refuses_the_old_name() -> None:
    env = _env("param_case_style", _task("poi", "get_place_details"), severity=1)
    spec = next(s for s in env.tool_specs() if s["function"]["name"] == "get_place_details")
    assert list(spec["function"]["parameters"]["properties"]) == ["placeId"]
    assert env.call("get_place_details", {"place_id": "P001"}).error == "invalid_arguments"
    assert env.call("get_place_details", {"placeId": "P001"}).ok
    pascal = _env("param_case_style", _task("poi", "get_weather"), severity=2)
    spec = next(s for s in pascal.tool_specs() if s["function"]["name"] == "get_weather")
    assert set(spec["function"]["parameters"]["properties"]) == {"City", "Day"}


def test_a_required_parameter_added_documents_its_one_value_and_an_optional_one_its_default() -> None:
    task = _task("poi", "get_place_details")
    env = _env("param_added", task, severity=2)
    spec = next(s for s in env.tool_specs() if s["function"]["name"] == "get_place_details")
    params = spec["function"]["parameters"]
    new = next(p for p in params["required"] if p != "place_id")
    value = params["properties"][new]["enum"][0]
    assert value in params["properties"][new]["description"]
    missing = env.call("get_place_details", {"place_id": "P001"})
    assert missing.error == "invalid_arguments" and value in missing.message
    assert env.call("get_place_details", {"place_id": "P001", new: value}).ok
    optional = _env("param_added", task, severity=1)
    assert optional.call("get_place_details", {"place_id": "P001"}).ok


def test_a_deprecated_tool_names_its_successor_then_goes() -> None:
    task = _task("poi", "get_place_details")
    works, removed, gone = (_env("tool_deprecated", task, severity=s) for s in (1, 2, 3))
    listed = {s["function"]["name"]: s["function"]["description"] for s in works.tool_specs()}
    assert "get_place_details_v3" in listed and "get_place_details_v3" in listed["get_place_details"]
    assert works.call("get_place_details", {"place_id": "P001"}).ok
    answer = removed.call("get_place_details", {"place_id": "P001"})
    assert answer.error == "moved" and "get_place_details_v3" in answer.message
    names_now = {s["function"]["name"] for s in gone.tool_specs()}
    assert "get_place_details" not in names_now and gone.call("get_place_details_v3", {"place_id": "P001"}).ok


def test_a_split_tool_shares_its_enum_and_points_to_the_other_part() -> None:
    env = _env("tool_split", _task("poi", "get_weather"), severity=2)
    parts = [s for s in env.tool_specs() if s["function"]["name"].startswith("get_weather")]
    days = [d for s in parts for d in s["function"]["parameters"]["properties"]["day"]["enum"]]
    assert len(parts) == 3 and sorted(days) == sorted(_days("get_weather"))
    first, last = parts[0]["function"]["name"], parts[-1]["function"]["name"]
    wrong = env.call(first, {"city": "Ghent", "day": "sunday"})
    assert wrong.error == "invalid_arguments" and last in wrong.message
    assert env.call(last, {"city": "Ghent", "day": "sunday"}).ok


def test_renamed_result_fields_are_listed_in_the_tools_release_note() -> None:
    spec = create("result_field_renamed", severity=2)
    task = next(t for t in sample_tasks(1) if spec.applies_to(t))
    env = _env("result_field_renamed", task, severity=2)
    notes = {s["function"]["name"]: s["function"]["description"] for s in env.tool_specs()}
    call = next(c for c in task.plan if "→" in notes[c.tool])
    result = env.call(call.tool, call.args)
    assert result.ok and not [k for k in _keys(result.content) if "_" in k]
    renamed = [k for k in _keys(result.content) if any(c.isupper() for c in k)]
    assert renamed and all(f"→ {k}" in notes[call.tool] for k in renamed)


def _keys(content) -> list[str]:
    if isinstance(content, dict):
        return [*content, *(k for v in content.values() for k in _keys(v))]
    if isinstance(content, list):
        return [k for v in content for k in _keys(v)]
    return []


def test_a_widened_enum_keeps_every_old_value() -> None:
    env = _env("enum_widened", _task("poi", "get_weather"), severity=2)
    spec = next(s for s in env.tool_specs() if s["function"]["name"] == "get_weather")
    days = spec["function"]["parameters"]["properties"]["day"]["enum"]
    assert set(_days("get_weather")) < set(days)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(cases(names=EVOLUTION, domain=["poi", "medical"], max_stack=2))
def test_the_oracle_is_right_on_drawn_cases_of_the_operators(case) -> None:
    episode = case.run(ORACLE)
    assert episode.outcome == ("success" if case.solvable else "refused"), episode.explain()


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(cases(names=EVOLUTION, domain="medical", drift=True))
def test_the_oracle_is_right_on_drawn_drift_cases_of_the_operators(case) -> None:
    assert all(p.after >= 1 for p in case.perturbations)
    episode = case.run(ORACLE)
    assert episode.outcome == ("success" if case.solvable else "refused"), episode.explain()


def test_a_failure_shrinks_to_the_mildest_case_that_still_fails() -> None:
    static = StaticAgent()
    settings_ = settings(max_examples=200, database=None, suppress_health_check=list(HealthCheck))
    found = find(cases(names=["param_case_style"], domain="poi", drift=True),
                 lambda c: not c.run(static).success, settings=settings_)  # fmt: skip
    (spec,) = found.perturbations
    assert (spec.name, spec.severity, spec.after) == ("param_case_style", 1, 1)


def _snapshot(domain: str) -> dict:
    return {"tools": [{"name": t.name, "description": t.description,
                       "inputSchema": t.spec["function"]["parameters"]} for t in get_domain(domain).tools]}  # fmt: skip


def test_a_release_is_read_off_two_snapshots() -> None:
    old = _snapshot("poi")
    new = json.loads(json.dumps(old))
    tools = {t["name"]: t for t in new["tools"]}
    tools["get_place_details"]["name"] = "getPlaceDetails"  # a rename by style
    props = tools["get_opening_hours"]["inputSchema"]["properties"]
    props["placeId"] = props.pop("place_id")
    tools["get_weather"]["description"] = "Weather for a city on a day (replaces nothing)."
    new["tools"] = [t for t in new["tools"] if t["name"] != "cancel_booking"]
    new["tools"].append({"name": "rate_place", "description": "Rate a place.", "inputSchema": {"type": "object"}})
    release = derive(parse_snapshot(old), parse_snapshot({"result": new}))
    assert release["tools"]["get_place_details"]["to"] == "getPlaceDetails"
    assert release["tools"]["get_opening_hours"]["params"] == {"placeId": "place_id"}
    assert release["tools"]["get_weather"]["description"].startswith("Weather for a city")
    assert release["removed"] == ["cancel_booking"] and [t["name"] for t in release["added"]] == ["rate_place"]
    assert derive(parse_snapshot(old), parse_snapshot(old)) == {}


def test_output_schema_renames_are_applied_to_results() -> None:
    old = _snapshot("poi")
    for tool in old["tools"]:
        if tool["name"] == "get_distance":
            tool["outputSchema"] = {"type": "object", "properties": {"km": {}, "walk_min": {}}}
    new = json.loads(json.dumps(old))
    schema = next(t for t in new["tools"] if t["name"] == "get_distance")["outputSchema"]
    schema["properties"]["walkMin"] = schema["properties"].pop("walk_min")
    release = derive(parse_snapshot(old), parse_snapshot(new))
    assert release["tools"]["get_distance"]["fields"] == {"walk_min": "walkMin"}
    env = Case(_task("poi", "get_distance"), (ReleaseDiff.between(release),)).env()
    env.reset()
    call = next(c for c in env.task.plan if c.tool == "get_distance")
    assert "walkMin" in env.call("get_distance", call.args).content
    spec = next(s for s in env.tool_specs() if s["function"]["name"] == "get_distance")
    assert "walk_min → walkMin" in spec["function"]["description"]  # as the new outputSchema documents it
    assert Case(env.task, (ReleaseDiff.between(release),)).run(ORACLE).success


@pytest.mark.parametrize("style", ["camel", "pascal"])
def test_a_release_that_restyles_every_parameter_leaves_poi_solvable(tmp_path, style) -> None:
    old = _snapshot("poi")
    new = json.loads(json.dumps(old))
    for tool in new["tools"]:
        schema = tool["inputSchema"]
        schema["properties"] = {restyle(k, style): v for k, v in schema["properties"].items()}
        schema["required"] = [restyle(k, style) for k in schema.get("required", [])]
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    result = diff_test(None, tmp_path / "old.json", tmp_path / "new.json", per_family=1, cache_dir=None)
    assert result.meta["domain"] == "poi" and result.verdicts
    assert not result.broken and not result.oracle_failures, result.text()
