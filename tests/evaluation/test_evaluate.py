"""evaluate, the report and its gates, without pytest's plugin: what ``openagent eval`` and a user's script get."""

import zlib

import pytest

import sandbox.evaluation as core
from tests import toys


@pytest.mark.usefixtures("toy_perturbations")
def test_evaluate_is_deterministic_batched_and_cached(tmp_path):
    agent = toys.Counter()
    report = core.evaluate(agent, tiers=["perception", "interaction"], n=6, seed=3, cache_dir=tmp_path)
    turns = agent.turns
    again = core.evaluate(agent, tiers=["perception", "interaction"], n=6, seed=3, cache_dir=tmp_path)
    assert report.to_dict()["rows"] == again.to_dict()["rows"] and agent.turns == turns
    assert [r.tier for r in report.records].count("perception") == 6
    assert core.check(report, "clean.success>=0.7 all.success>=0.7").ok
    assert core.check(report, "clean.success>=1").verdict == "INCONCLUSIVE"  # no interval of 12 cases reaches 1


@pytest.mark.parametrize("batch_size", [64, 5])
def test_evaluate_reports_progress_episode_by_episode_to_the_total(tmp_path, batch_size):
    from sandbox.agents import OracleAgent

    threaded = OracleAgent()
    threaded.concurrency = 4  # its episodes run on threads, each ending on its own
    for agent in ("oracle", "oracle", threaded):
        seen: list[tuple[int, int]] = []
        cache = tmp_path if isinstance(agent, str) else None  # the second oracle run reads its episodes back
        report = core.evaluate(
            agent, tiers=[1, 2], n=6, cache_dir=cache, batch_size=batch_size, progress=lambda *a, s=seen: s.append(a)
        )
        total = len({r.case for r in report.records}) + len({r.task for r in report.records})
        if batch_size == 64:
            assert seen == [(done, total) for done in range(1, total + 1)], (agent, seen)
        else:  # a clean twin of both batches counts in each
            assert [d for d, _ in seen] == list(range(1, len(seen) + 1)) and seen[-1][0] == seen[0][1] >= total


def test_a_tier_is_skipped_only_where_none_of_what_was_asked_applies():
    assert core.evaluate("oracle", "all", n=1, cache_dir=None).meta["tiers_skipped"] == []
    named = core.evaluate("oracle", "all", names=["query_noise"], n=1, cache_dir=None)  # the other tiers: not asked
    assert named.meta["tiers_skipped"] == [] and "skipped" not in named.table()


def test_evaluate_draws_from_the_pool_asked_for():
    train = core.evaluate("oracle", tiers=1, n=4, cache_dir=None, pool="train")
    held_out = core.evaluate("oracle", tiers=1, n=4, cache_dir=None)
    assert all(",train" in r.label for r in train.records), [r.label for r in train.records]
    assert all(",eval" in r.label for r in held_out.records), [r.label for r in held_out.records]
    assert (train.meta["pool"], held_out.meta["pool"]) == ("train", "eval")


def test_report_round_trips_and_gates(tmp_path):
    from sandbox.perturbations import names

    report = core.evaluate("oracle", tiers=1, n=4, names=names(1)[:2], cache_dir=None)
    path = tmp_path / "r.json"
    report.to_json(path)
    loaded = core.Report.load(path)
    assert loaded.to_dict()["rows"] == report.to_dict()["rows"]
    with pytest.raises(core.GateError, match="'x' is not a number"):
        core.check(report, "perception.delta>=x")
    assert not core.check(report, "perception.episodes>=100").ok
    assert "no episodes measured for 'reasoning'" in core.check(report, "reasoning.success>=0").failures[0]
    # Text, a list of texts and parsed criteria are the same gate.
    texts = ["perception.success>=0.5", "perception.episodes>=4"]
    verdicts = {core.check(report, g).message() for g in (" ".join(texts), texts, core.parse_gate(texts))}
    assert len(verdicts) == 1
    assert core.compare(loaded, report, 5).verdict != "FAIL"


def test_a_dead_agent_is_an_error_naming_the_cause_not_a_table_of_zeros():
    with pytest.raises(core.AgentFailure, match=r"failed on 16 of 16 episodes .*ConnectionRefusedError"):
        core.evaluate(toys.Dead(), tiers=1, n=8, cache_dir=None)


class Fussy(toys.Counter):
    """The oracle, except that a batch holding one of about a tenth of the conversations, once it has a tool
    result, raises."""

    def fingerprint(self):
        return "fussy-v1"

    def act(self, turns):
        if any(zlib.crc32(t.messages[1]["content"].encode()) % 10 == 0 and len(t.messages) > 2 for t in turns):
            raise RuntimeError("cannot read this conversation")
        return super().act(turns)


@pytest.mark.usefixtures("toy_perturbations")
def test_an_agent_that_raises_on_some_conversations_measures_the_same_cold_and_warm(tmp_path):
    tiers = ["perception", "interaction"]
    cold = core.evaluate(Fussy(), tiers=tiers, n=24, seed=5, batch_size=8, cache_dir=tmp_path)
    warm_agent = Fussy()
    warm = core.evaluate(warm_agent, tiers=tiers, n=24, seed=5, batch_size=8, cache_dir=tmp_path)
    failed = [r for r in cold.records if "agent_error" in (r.outcome, r.clean_outcome)]
    assert 0 < len(failed) < len(cold.records) // 4, [r.outcome for r in cold.records]
    assert [r.to_dict() for r in warm.records] == [r.to_dict() for r in cold.records]
    assert 0 < warm.meta["episodes_run"] <= 2 * len(failed)  # only the episodes that raised ran again


class Refuser:
    """Refuses every request."""

    def act(self, turns):
        return ["I cannot help with that request." for _ in turns]


def test_an_agent_that_refuses_everything_fails_the_default_gate():
    report = core.evaluate(Refuser(), n=30, cache_dir=None)
    result = core.check(report, "default")
    assert result.verdict == "FAIL"
    assert any(c.text == "clean.wrong_refusal<=0.1" and c.verdict == "FAIL" for c in result.checks)
    # The refusal criterion alone would have passed it: both sides of refusing are in the default.
    assert core.check(report, "internalization.refusal>=0.8").verdict == "PASS"


def test_evaluate_on_named_task_families_records_them_and_a_baseline_of_others_is_refused():
    from sandbox.errors import UnknownName

    families = ["phone", "unknown_place"]
    narrow = core.evaluate("oracle", tiers=[1, 4], n=6, cache_dir=None, families=families)
    assert {r.family for r in narrow.records} == set(families) and narrow.meta["families"] == families
    wide = core.evaluate("oracle", tiers=[1, 4], n=6, cache_dir=None)
    result = core.compare(narrow, wide)
    assert not result.ok
    assert any("families: ['phone', 'unknown_place'] here, None in the baseline" in c.detail for c in result.checks)
    with pytest.raises(UnknownName, match="Did you mean 'phone'"):
        core.evaluate("oracle", tiers=1, n=2, cache_dir=None, families=["phnoe"])


def test_a_sample_is_one_value_that_draws_the_same_cases_each_time_it_is_read():
    # evaluate, draw_cases and the worst-case search pass a Sample down: names given as a generator are read once
    from sandbox.evaluation.draw import draw_sample
    from sandbox.evaluation.sample import Sample

    wanted = ["tool_name_noise", "semantic_renaming"]
    sample = Sample("perception", n=5, seed=2, names=(n for n in wanted), families=iter(["book_best"]))
    first = [c.key() for c in draw_sample(sample)]
    assert first == [c.key() for c in draw_sample(sample)]
    assert first == [c.key() for c in core.draw_cases("perception", 5, 2, names=wanted, families=["book_best"])]
    assert {p.name for c in draw_sample(sample) for p in c.perturbations} <= set(wanted) and len(first) == 5
