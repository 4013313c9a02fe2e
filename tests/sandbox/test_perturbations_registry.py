"""The registry, the vocabulary pools, the generated catalogue, and the static baseline's drops."""

from __future__ import annotations

import sys
import textwrap
from importlib.metadata import EntryPoint
from typing import ClassVar

import pytest

import sandbox
from sandbox import StaticAgent
from sandbox.audits.catalogue import DOC, catalogue_markdown
from sandbox.audits.strength import bite, sample_tasks
from sandbox.case import Case, run_cases
from sandbox.domains import DOMAINS
from sandbox.perturbations import Perturbation, get, names, register, registry, vocab
from sandbox.perturbations.wrappers import QueryWrapper

TIER_OF = {
    "perception": {"query_paraphrase", "query_noise", "redundant_query", "underspecified_query", "tool_name_noise",
                   "semantic_renaming", "identity_erasure", "semantic_trap", "distractor_tools", "schema_noise",
                   "description_rewrite", "param_case_style", "param_added", "enum_widened", "tool_deprecated",
                   "tool_split", "description_release"},
    "interaction": {"missing_values", "format_shift", "runtime_error", "rate_limit", "tool_redirection",
                    "verification_code_shift", "behaviour_change", "result_field_renamed", "deceptive_result",
                    "deceptive_record"},
    "reasoning": {"dependency_merge", "dependency_split", "logic_inversion", "argument_restructuring"},
    "internalization": {"domain_transfer", "missing_capability", "nonexistent_entity", "fatal_error"},
}  # fmt: skip


@pytest.fixture
def clean_registry():
    saved, loaded = dict(registry._REGISTRY), registry._plugins_loaded
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)
    registry._plugins_loaded = loaded


def test_importing_sandbox_registers_the_whole_catalogue() -> None:
    assert sandbox.StaticAgent is StaticAgent
    for tier, expected in TIER_OF.items():
        assert set(names(tier=tier)) == expected
    assert len(names()) == sum(map(len, TIER_OF.values()))
    assert {n for n in names() if get(n).unsolvable} == {"missing_capability", "nonexistent_entity", "fatal_error"}


def test_every_spec_documents_itself() -> None:
    for name in names():
        cls = get(name)
        assert cls.summary and cls.expected, name


def test_an_unknown_name_says_what_was_meant() -> None:
    with pytest.raises(KeyError, match="Did you mean 'query_paraphrase'"):
        get("query_paraphrse")
    with pytest.raises(ValueError, match="Unknown tier"):
        names(tier="perceptoin")


class Shout(Perturbation):
    name: ClassVar[str] = "shout"
    tier = "perception"
    shift = "query"
    summary = "the request in capitals"
    expected = "read it anyway"

    def apply(self, env):
        return _Shout(env, self)


class _Shout(QueryWrapper):
    def rewrite(self, query: str) -> str:
        return query.upper()


def test_users_register_their_own_perturbations(clean_registry) -> None:
    register(Shout)
    assert "shout" in names(tier=1)
    spec = registry.create("shout")
    task = sample_tasks(1)[0]
    assert Case(task, (spec,)).env().query() == task.query.upper()
    assert registry.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="already registered"):
        register(type("Shout", (Shout,), {"__qualname__": "Other"}))


def test_other_packages_register_through_the_entry_point(clean_registry, tmp_path, monkeypatch) -> None:
    (tmp_path / "acme_shifts.py").write_text(
        textwrap.dedent("""
        from typing import ClassVar
        from sandbox.perturbations import Perturbation, register

        @register
        class Whisper(Perturbation):
            name: ClassVar[str] = "whisper"
            tier = "interaction"
            shift = "query"

            def apply(self, env):
                return env
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint(name="acme", value="acme_shifts", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [point] if group == point.group else [])
    registry._plugins_loaded = False
    assert get("whisper").tier == "interaction"
    assert "whisper" in names(tier="interaction")
    sys.modules.pop("acme_shifts", None)


def _pooled() -> list:
    """The perturbations' word pools and the pooled tables of every registered domain's vocabulary."""
    domains = [d.vocabulary.pooled() for d in DOMAINS.values() if d.vocabulary is not None]
    return [*vocab.VOCABULARIES.values(), *(table for tables in domains for table in tables.values())]


def test_train_and_eval_pools_share_nothing() -> None:
    train = set().union(*(vocab.pool_words(v, "train") for v in _pooled()))
    evaluation = set().union(*(vocab.pool_words(v, "eval") for v in _pooled()))
    assert train and evaluation and not train & evaluation
    for domain in DOMAINS.values():
        for family in domain.families:
            pools = family.paraphrases
            assert not set(pools["train"]) & set(pools["eval"]), family.name
            assert not (set(pools["train"]) | set(pools["eval"])) & set(family.phrasings), family.name


def test_rewritten_descriptions_keep_what_the_tool_does() -> None:
    from sandbox.agents.oracle import capability

    for domain in DOMAINS.values():
        if domain.vocabulary is None:  # a world other tests registered, with no rewrites of its own
            continue
        for tool in domain.tools:
            rewrites = domain.vocabulary.description_rewrites[tool.name]
            texts = [tool.description, *(t for pool in rewrites.values() for t in pool)]
            for text in texts:
                assert capability(text, ()) == tool.name, text


def test_the_catalogue_doc_is_generated_from_the_registry() -> None:
    assert DOC.read_text() == catalogue_markdown(), "run: python -m sandbox.audits.catalogue"
    for name in names():
        assert f"`{name}`" in DOC.read_text()


def test_the_static_agent_solves_the_clean_test_split() -> None:
    for domain in ("poi", "medical"):
        tasks = DOMAINS[domain].tasks("test", 200)
        episodes = run_cases(StaticAgent(), [Case(t) for t in tasks])
        assert all(e.success for e in episodes), next(e.explain() for e in episodes if not e.success)


@pytest.mark.parametrize("name", names())
def test_every_perturbation_bites_the_static_agent(name: str) -> None:
    row = bite(name, sample_tasks(per_family=1))
    assert row.clean == 100.0
    assert row.bites or row.mild, f"{name}: static {row.clean:.0f}% clean, {row.perturbed:.0f}% perturbed"
