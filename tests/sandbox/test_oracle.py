import collections
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sandbox
from sandbox import OracleAgent, make_env, run_episodes


@pytest.mark.parametrize("domain", ["poi", "medical"])
def test_oracle_solves_every_solvable_test_task_and_refuses_every_unsolvable_one(domain):
    tasks = sandbox.tasks(domain, "test")
    episodes = run_episodes(OracleAgent(), [make_env(domain, t) for t in tasks])
    outcomes = collections.Counter((e.task.solvable, e.outcome) for e in episodes)
    assert set(outcomes) == {(True, "success"), (False, "refused")}, outcomes
    assert all(e.tool_errors == 0 for e in episodes)


_NAME = st.text(alphabet="ab_-1\u00e9.", min_size=1, max_size=4)


@given(
    names=st.lists(_NAME, min_size=1, max_size=4, unique=True),
    text=st.text(alphabet="ab_-1\u00e9. ,'", max_size=24),
)
def test_tool_names_are_found_as_the_alternation_regex_finds_them(names, text):
    from sandbox.agents.oracle import names_pattern

    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    regex = re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")
    text = text + " " + " ".join(names) + "-" + names[0]
    fast = names_pattern(tuple(names))
    assert fast.findall(text) == regex.findall(text)
    assert fast.sub(" ", text) == regex.sub(" ", text)
