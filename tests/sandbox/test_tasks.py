import pytest

from sandbox.domains import DOMAINS, get_domain
from sandbox.task import Call, Task


def test_families_cover_the_issue():
    poi, medical = get_domain("poi"), get_domain("medical")
    assert len([f for f in poi.families if f.unsolvable is None]) >= 8
    assert len([f for f in medical.families if f.unsolvable is None]) >= 5
    for domain in (poi, medical):
        kinds = {f.unsolvable for f in domain.families}
        assert {"missing_capability", "nonexistent_entity"} <= kinds
        for family in domain.families:
            clean, held_out = set(family.phrasings), {p for pool in family.paraphrases.values() for p in pool}
            assert len(clean | held_out) >= 4
            assert held_out and not clean & held_out
            assert not set(family.paraphrases["train"]) & set(family.paraphrases["eval"])


@pytest.mark.parametrize("name", list(DOMAINS))
def test_plans_have_one_to_five_calls_and_some_run_in_parallel(name):
    tasks = get_domain(name).tasks("test")
    sizes = {t.n_calls for t in tasks if t.solvable}
    assert min(sizes) >= 1 and max(sizes) <= 5
    assert any(len(wave) > 1 for t in tasks for wave in t.waves())
    assert any(t.write is not None for t in tasks)
    for t in tasks:
        assert t.solvable or not t.answer
        assert t.query == get_domain(name).family(t.family).phrasings[t.phrasing].format(**t.params)


def test_poi_has_a_five_call_task():
    assert max(t.n_calls for t in get_domain("poi").tasks("test")) == 5


def test_a_cyclic_plan_is_reported():
    task = Task(
        id="x", domain="poi", family="phone", split="test", seed=0, params={}, phrasing=0, query="q",
        plan=(Call(id="a", tool="t", args={}, after=("b",)), Call(id="b", tool="t", args={}, after=("a",))),
        answer={}, sources={},
    )  # fmt: skip
    with pytest.raises(ValueError, match="cycle"):
        task.waves()


def test_unknown_names_get_a_did_you_mean():
    with pytest.raises(KeyError, match="Did you mean 'medical'"):
        get_domain("medicl")
    with pytest.raises(KeyError, match="Did you mean 'phone'"):
        get_domain("poi").family("phon")
    with pytest.raises(ValueError, match="split must be one of"):
        get_domain("poi").tasks("validation")


def test_an_unknown_name_is_a_lookup_error_and_a_usage_error_of_the_one_family():
    from sandbox.errors import OpenAgentError, UnknownName, UsageError
    from sandbox.perturbations import get

    with pytest.raises(UnknownName) as info:
        get("query_nosie")
    error = info.value
    assert isinstance(error, KeyError) and isinstance(error, UsageError) and isinstance(error, OpenAgentError)
    assert str(error).startswith("Unknown perturbation 'query_nosie'. Did you mean 'query_noise'?")  # no quotes


def test_tasks_of_named_families_are_the_same_draw_with_the_others_left_out():
    import sandbox
    from sandbox.errors import UnknownName, UsageError

    every = sandbox.tasks("poi", "train", 200, seed=4)
    some = sandbox.tasks("poi", "train", 20, seed=4, families=["phone", "weather"])
    assert len(some) == 20 and {t.family for t in some} == {"phone", "weather"}
    assert [t for t in every if t.family in ("phone", "weather")][:20] == some
    with pytest.raises(UnknownName, match="Did you mean 'phone'"):
        sandbox.tasks("poi", "train", 5, families=["phnoe"])
    with pytest.raises(UsageError, match="none given"):
        sandbox.tasks("poi", "train", 5, families=[])
