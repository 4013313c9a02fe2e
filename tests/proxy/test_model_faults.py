"""Model faults as specs: what each does to a completion, how severity and onset count turns, and that they are
perturbations like the others (registered, JSON round-trip, never drawn by tier)."""

from __future__ import annotations

import json

import pytest

import sandbox
from sandbox.case import Case
from sandbox.evaluation.draw import perturbation_classes
from sandbox.perturbations import registry
from sandbox.perturbations.model import FALSE_SUCCESS, REFUSAL, ModelFault, ModelRoute
from sandbox.proxy.llm import sse_chunks

FAULTS = [n for n in registry.names(model_faults=True) if registry.get(n).model_fault]
TOOLS = ["find_place", "get_place_details"]


def _completion(text: str | None = None, args: str | None = '{"name": "Green Bridge Spa", "city": "Ghent"}'):
    message = {"role": "assistant", "content": text}
    if args is not None:
        call = {"id": "c1", "type": "function", "function": {"name": "find_place", "arguments": args}}
        message["tool_calls"] = [call]
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}  # fmt: skip


def test_ten_model_faults_are_registered_and_never_drawn_by_tier():
    assert len(FAULTS) == 10
    assert not set(FAULTS) & set(registry.names())
    assert not {c.name for c in perturbation_classes("interaction")} & set(FAULTS)
    assert [c.name for c in perturbation_classes("interaction", ["model_refusal"])] == ["model_refusal"]


@pytest.mark.parametrize("name", FAULTS)
def test_each_fault_round_trips_and_may_start_late(name):
    spec = registry.create(name, severity=3, after=2)
    assert registry.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert "after=2" in spec.label() and isinstance(spec, ModelFault)


@pytest.mark.parametrize("name", FAULTS)
def test_the_env_is_untouched_and_hands_out_one_route(name):
    task = sandbox.tasks("poi", "test", n=1)[0]
    clean, faulted = Case(task).env(), Case(task, (registry.create(name), registry.create("model_refusal"))).env()
    assert faulted.reset() == clean.reset() and faulted.tool_specs() == clean.tool_specs()
    route = faulted.get_wrapper_attr("model_route")()
    assert route is faulted.get_wrapper_attr("model_route")() and len(route.faults) == 2


def test_malformed_arguments_are_not_json():
    out = registry.create("model_malformed_arguments").perturb(_completion(), TOOLS)
    args = out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(ValueError):
        json.loads(args)
    assert registry.create("model_malformed_arguments").perturb(_completion("hi", None), TOOLS) is None


def test_an_unknown_tool_is_none_of_the_offered():
    out = registry.create("model_unknown_tool").perturb(_completion(), ["find_place", "find_place_v2"])
    assert out["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "find_place_v2_v2"


def test_a_truncated_reply_stops_for_length():
    out = registry.create("model_truncated_reply").perturb(_completion("The phone is 555-1767.", None), TOOLS)
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["choices"][0]["message"]["content"] == "The phone i"


@pytest.mark.parametrize(("name", "text"), [("model_empty_reply", ""), ("model_refusal", REFUSAL),
                                            ("model_false_success", FALSE_SUCCESS)])  # fmt: skip
def test_a_said_fault_answers_with_no_call(name, text):
    out = registry.create(name).perturb(_completion(), TOOLS)
    message = out["choices"][0]["message"]
    assert message["content"] == text and "tool_calls" not in message


@pytest.mark.parametrize(("severity", "faulted"), [(1, [1]), (2, [1, 2]), (3, [1, 2, 3, 4])])
def test_severity_counts_turns_from_the_onset(severity, faulted):
    route = ModelRoute((registry.create("model_false_success", severity=severity, after=1),))
    hit = []
    for turn in range(5):
        http, due = route.decide(turn)
        if route.rewrite(due, turn, _completion(), TOOLS) is not None:
            hit.append(turn)
    assert http is None and hit == faulted


@pytest.mark.parametrize(("severity", "failures"), [(1, 1), (2, 3), (3, 6)])
def test_an_http_fault_counts_requests(severity, failures):
    route = ModelRoute((registry.create("model_rate_limited", severity=severity),))
    statuses = [route.decide(0)[0] for _ in range(6)]
    assert sum(s is not None for s in statuses) == failures and statuses[0].error()[1] == {"Retry-After": "1"}
    assert registry.create("model_server_error").error()[:2] == (500, {})


def test_a_call_fault_waits_for_a_turn_with_a_call():
    route = ModelRoute((registry.create("model_malformed_arguments"),))
    assert route.rewrite(route.decide(0)[1], 0, _completion("thinking", None), TOOLS) is None
    assert route.rewrite(route.decide(1)[1], 1, _completion(), TOOLS) is not None
    assert [e["turn"] for e in route.summary()["injected"]] == [1]


def test_the_stream_of_a_completion_says_what_it_says():
    events = [json.loads(e[len(b"data: ") :]) for e in sse_chunks(_completion("hi"), usage=True)[:-1]]
    args = "".join(d["delta"]["tool_calls"][0]["function"]["arguments"] for e in events for d in e["choices"]
                   if d["delta"].get("tool_calls"))  # fmt: skip
    assert json.loads(args) == {"name": "Green Bridge Spa", "city": "Ghent"}
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls" and "usage" in events[-1]
    assert sse_chunks(_completion())[-1] == b"data: [DONE]\n\n"


@pytest.mark.parametrize(("name", "final"), [("model_malformed_arguments", True), ("model_truncated_reply", True),
                                             ("model_unknown_tool", False)])  # fmt: skip
def test_a_faulted_reply_whose_calls_cannot_be_made_is_final_where_nothing_follows(name, final):
    route = ModelRoute((registry.create(name),))
    _, due = route.decide(0)
    served = route.rewrite(due, 0, _completion(), TOOLS)
    route.served(0, served, faulted=True)
    assert route.summary()["final_faulted"] is final
    route.served(1, _completion(), faulted=False)  # the harness asked again: what it took is not the fault
    assert route.summary()["final_faulted"] is False
