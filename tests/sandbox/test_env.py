"""The env and its wrappers: what a wrapper exposes of the env it wraps, and the order a stack applies in."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sandbox import Wrapper, make_env, tasks
from sandbox.perturbations import LAYERS, Perturbation, apply_stack, get, names, register

STACK_ORDER = [
    ("domain_transfer",), ("query_paraphrase",), ("missing_capability", "nonexistent_entity", "fatal_error"),
    ("dependency_merge",), ("logic_inversion",), ("dependency_split", "tool_split"), ("argument_restructuring",),
    ("behaviour_change",), ("deceptive_result", "deceptive_record"), ("underspecified_query",),
    ("verification_code_shift",),
    ("tool_redirection",), ("runtime_error",), ("rate_limit",), ("missing_values",),
    ("format_shift", "result_field_renamed"),
    ("description_rewrite", "description_release"),
    ("schema_noise", "param_case_style", "param_added", "enum_widened"),
    ("distractor_tools", "tool_deprecated"), ("semantic_trap",), ("semantic_renaming",), ("identity_erasure",),
    ("tool_name_noise",), ("query_noise", "redundant_query"),
]  # fmt: skip
"""The order in which ``apply_stack`` wraps the built-in catalogue, lowest first; names in one tuple share a
layer (they keep the order they were given in). Pinned from the float layers this order once came from."""


def _env():
    return make_env("poi", tasks("poi", "test", 1)[0])


def test_a_wrapper_exposes_what_the_stack_and_the_runner_need():
    env = _env()
    wrapped = Wrapper(Wrapper(env))
    for attribute in ("task", "state", "solvable", "domain", "world", "system_prompt"):
        assert getattr(wrapped, attribute) is getattr(env, attribute), attribute
    assert wrapped.unwrapped is env
    assert wrapped.reset() == env.reset()


def test_anything_else_of_an_inner_env_is_reached_on_purpose():
    env = _env()
    env.extra = "inner"
    inner = Wrapper(env)
    inner.marker = "middle"
    wrapped = Wrapper(inner)
    with pytest.raises(AttributeError):
        wrapped.extra  # noqa: B018 - no silent forwarding through the stack
    with pytest.raises(AttributeError):
        wrapped.marker  # noqa: B018
    assert wrapped.get_wrapper_attr("extra") == "inner"
    assert wrapped.get_wrapper_attr("marker") == "middle"
    assert wrapped.get_wrapper_attr("label") == "wrapper"
    assert wrapped.unwrapped.extra == "inner"
    with pytest.raises(AttributeError):
        wrapped.get_wrapper_attr("nowhere")


def test_a_stack_applies_in_the_pinned_layer_order_whatever_order_it_is_given_in():
    pinned = [n for layer in STACK_ORDER for n in layer]
    assert sorted(pinned) == sorted(names()), "a new perturbation: add it to STACK_ORDER where it belongs"
    rank = {n: i for i, layer in enumerate(STACK_ORDER) for n in layer}
    for given in (pinned, pinned[::-1], sorted(pinned)):
        applied = [w.name for w in apply_stack(_env(), [_Recorder(get(n)) for n in given]).wrappers()]
        assert [rank[n] for n in applied] == sorted(rank[n] for n in applied)
        for layer in STACK_ORDER:
            assert [n for n in applied if n in layer] == [n for n in given if n in layer], "stable within a layer"


class _Recorder:
    """A perturbation's class as ``apply_stack`` sorts it, applying one plain wrapper that records its name, so
    the order is all that is tested (a real domain transfer, say, rebuilds the stack below it)."""

    def __init__(self, cls) -> None:
        self.name, self.layer = cls.name, cls.layer

    def apply(self, env):
        wrapper = Wrapper(env)
        wrapper.name = self.name
        return wrapper


def test_a_layer_is_one_of_the_named_layers():
    assert all(get(n).layer in LAYERS for n in names())

    class Nowhere(Perturbation):
        name: ClassVar[str] = "nowhere"
        tier = "perception"
        shift = "query"
        layer = "basement"  # type: ignore[assignment]  # a layer that is not one: what the class must refuse

    with pytest.raises(TypeError, match="layer must be one of"):
        register(Nowhere)
    with pytest.raises(ValueError, match="Unknown layer 'basement'"):
        apply_stack(_env(), [Nowhere()])
