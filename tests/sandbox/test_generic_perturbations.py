"""The catalogue on a domain it has no words for: the library (``sandbox.perturbations.library``), built
through the internals. Every perturbation either changes what the agent sees or how tools answer, or says it
does not apply (and the catalogue says why); the oracle solves every applied solvable case and refuses the rest."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

from sandbox import OracleAgent
from sandbox.case import Case, run_cases
from sandbox.perturbations import POOLS, get, library, names
from sandbox.perturbations.catalogue import MATRIX_DOC, matrix_markdown

ORACLE = OracleAgent()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tasks():
    with library.registered() as domain:
        yield domain.tasks("test", 15)


def test_the_library_is_a_small_domain_of_its_own(tasks) -> None:
    domain = library.DOMAIN
    assert len(domain.tools) == 3 and sum(t.writes for t in domain.tools) == 1
    assert len(domain.families) == 5 and sum(f.unsolvable is not None for f in domain.families) == 1
    assert {t.family for t in tasks} == {f.name for f in domain.families}
    episodes = run_cases(ORACLE, [Case(t) for t in tasks])
    assert {(e.task.solvable, e.outcome) for e in episodes} == {(True, "success"), (False, "refused")}


def _seen(env, task) -> str:
    """What an agent meets: the query, the tools, solvability, and the gold calls' observations."""
    env.reset()
    calls = [env.observe(env.call(c.tool, c.args)) for c in task.plan]
    return json.dumps([env.query(), env.tool_specs(), env.solvable, calls], sort_keys=True, default=str)


def _specs(name: str):
    cls = get(name)
    return [
        cls(severity=s, pool=p, seed=7) for p in POOLS for s in range(max(1, cls.min_severity), cls.max_severity + 1)
    ]


@pytest.mark.parametrize("name", names())
def test_every_perturbation_changes_a_case_or_says_it_does_not_apply(name: str, tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in tasks if spec.applies_to(t)]
    if not cases:
        assert get(name).limits, f"{name} applies to no library case: its catalogue entry must say where it does not"
        return
    unchanged = [c for c in cases if _seen(c.env(), c.task) == _seen(Case(c.task).env(), c.task)]
    assert not unchanged, f"{name} counted as applied but changes nothing: {unchanged[0]}"


@pytest.mark.parametrize("name", names())
def test_on_our_domains_too_an_applied_perturbation_changes_the_case(name: str) -> None:
    from sandbox.perturbations.strength import sample_tasks

    ours = sample_tasks(per_family=1)
    cases = [Case(t, (spec,)) for spec in _specs(name)[:3] for t in ours if spec.applies_to(t)]
    unchanged = [c for c in cases if _seen(c.env(), c.task) == _seen(Case(c.task).env(), c.task)]
    assert not unchanged, f"{name} counted as applied but changes nothing: {unchanged[0]}"


@pytest.mark.parametrize("name", names())
def test_the_oracle_solves_every_applied_solvable_case_and_refuses_the_rest(name: str, tasks) -> None:
    cases = [Case(t, (spec,)) for spec in _specs(name) for t in tasks if spec.applies_to(t)]
    episodes = run_cases(ORACLE, cases)
    wrong = [e for c, e in zip(cases, episodes, strict=True) if e.outcome != ("success" if c.solvable else "refused")]
    assert not wrong, "\n\n".join(e.explain() for e in wrong[:2])


def test_most_of_the_catalogue_applies_to_the_library(tasks) -> None:
    applied = collections.Counter(n for n in names() for s in _specs(n) for t in tasks if s.applies_to(t))
    missing = sorted(set(names()) - set(applied))
    assert missing == ["domain_transfer"], missing


def test_no_perturbation_or_oracle_names_a_domain_tool() -> None:
    pattern = re.compile(r"find_place|find_patient|search_places|\bpoi\b|\bmedical\b|(?-i:\bFINDERS?\b)", re.IGNORECASE)
    allowed = {"vocab.py", "library.py", "strength.py", "catalogue.py"}
    files = [*(ROOT / "sandbox/perturbations").rglob("*.py"), *(ROOT / "sandbox/agents/oracle").rglob("*.py")]
    hits = [f"{f.name}: {line.strip()}" for f in files if f.name not in allowed
            for line in f.read_text().splitlines() if pattern.search(line) and "POI" not in line]  # fmt: skip
    assert not hits, hits


def test_the_matrix_doc_is_generated() -> None:
    assert MATRIX_DOC.read_text() == matrix_markdown(), "run: python -m sandbox.perturbations.catalogue --matrix"


@pytest.mark.parametrize("name", ["semantic_renaming", "schema_noise", "description_rewrite", "format_shift"])
def test_train_and_eval_pools_stay_disjoint_on_a_domain_without_vocabulary(name: str, tasks) -> None:
    cls = get(name)
    task = next(t for t in tasks if t.solvable and len(t.plan) > 1)

    def words(env) -> set[str]:
        """The names an agent reads: of tools, parameters and result keys."""
        env.reset()  # the gold call in clean names reaches only a perturbation that leaves names alone
        first = env.observe(env.call(task.plan[0].tool, task.plan[0].args)) if name == "format_shift" else "{}"
        names = {s["function"]["name"] for s in env.tool_specs()}
        names |= {p for s in env.tool_specs() for p in s["function"]["parameters"]["properties"]}
        descriptions = {s["function"]["description"] for s in env.tool_specs()}
        return names | descriptions | set(re.findall(r'"(\w+)":', first))

    clean = words(Case(task).env())
    new = {p: words(Case(task, (cls(severity=min(2, cls.max_severity), pool=p, seed=1),)).env()) - clean for p in POOLS}
    assert new["train"] and new["eval"] and not new["train"] & new["eval"] - {"status", "ok"}, new
