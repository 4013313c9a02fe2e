"""The episode cache: it reads back what it stored, stores no agent error, and keys on all that decides an episode."""

import sandbox
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache
from tests import toys


def test_the_cache_reads_back_what_it_stored_and_leaves_no_temporary_file(tmp_path):
    cases = [Case(t) for t in sandbox.tasks("poi", "test", n=4)]
    agent = toys.Counter()
    cache = EpisodeCache(tmp_path)
    first = cache.run(agent, cases)
    cache.flush()
    turns = agent.turns
    second = EpisodeCache(tmp_path).run(agent, cases)
    assert agent.turns == turns and [e.outcome for e in first] == [e.outcome for e in second]
    assert first[0].model_dump() == second[0].model_dump()
    assert not list(tmp_path.rglob(".tmp-*"))


def test_agent_errors_are_not_cached(tmp_path):
    class Broken:
        def act(self, turns):
            raise RuntimeError("server down")

    cache = EpisodeCache(tmp_path)
    [episode] = cache.run(Broken(), [Case(sandbox.tasks("poi", "test", n=1)[0])])
    cache.flush()
    assert episode.outcome == "agent_error" and not list(tmp_path.rglob("pack-*"))


def test_the_key_depends_on_agent_case_and_step_limit():
    a, b = (Case(t) for t in sandbox.tasks("poi", "test", n=2))
    keys = {EpisodeCache.key("x", a, 8), EpisodeCache.key("y", a, 8), EpisodeCache.key("x", b, 8)}
    assert len(keys | {EpisodeCache.key("x", a, 9)}) == 4
