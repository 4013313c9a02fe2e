import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sandbox
from sandbox import ScriptedAgent, make_env, run_episode
from sandbox.judge import is_refusal, quotes


def task_of(family, domain="poi"):
    return next(t for t in sandbox.tasks(domain, "test") if t.family == family)


def call(tool, **arguments):
    return f'<tool_call>{{"name": "{tool}", "arguments": {json.dumps(arguments)}}}</tool_call>'


def test_refusal_detection():
    assert is_refusal("I cannot do that: no taxi tool.")
    assert is_refusal("Sorry, but I can't book taxis")
    assert not is_refusal("The phone is 555-1234. I cannot wait to visit!")
    assert not is_refusal("")


def test_quotes_matches_whole_values_only():
    assert quotes("It is 3.2 km away.", "3.2")
    assert not quotes("It is 13.25 km away.", "3.2")
    assert not quotes("It is 3.25 km away.", "3.2")
    assert quotes("code: BK-ABCDE", "bk-abcde")


_TEXT = st.text(alphabet="aAbBkK12._- :,\u00e9\u212a\u017f", max_size=12)


@given(answer=_TEXT, value=st.one_of(_TEXT, st.text(alphabet="aAbBkK12._- :,\u00e9\u212a\u017f", max_size=3)))
def test_quotes_is_the_token_regex(answer, value):
    # quotes() reads ASCII text without a regex per value; it must agree with the definition everywhere.
    pattern = r"(?<![\w.])" + re.escape(value.strip()) + r"(?!\w|\.\d)"
    assert quotes(answer, value) == (re.search(pattern, answer, re.IGNORECASE) is not None)
    if value.strip() and answer:
        inside = answer[: len(answer) // 2] + value.swapcase() + answer[len(answer) // 2 :]
        assert quotes(inside, value) == (re.search(pattern, inside, re.IGNORECASE) is not None)


def test_garbage_is_a_parse_error_never_a_refusal():
    task = task_of("taxi")
    episode = run_episode(ScriptedAgent(['<tool_call>{"name": "I cannot"']), make_env("poi", task))
    assert episode.outcome == "parse_error"


def test_answering_an_unsolvable_task_is_hallucinated_success():
    episode = run_episode(ScriptedAgent(["Your taxi is booked, code TX-1."]), make_env("poi", task_of("taxi")))
    assert episode.outcome == "hallucinated_success" and not episode.success
    episode = run_episode(ScriptedAgent(["I cannot order taxis."]), make_env("poi", task_of("taxi")))
    assert episode.outcome == "refused" and episode.success


def test_claiming_a_booking_that_never_happened_is_hallucinated_success():
    episode = run_episode(ScriptedAgent(["Booked! code: BK-AAAAA"]), make_env("poi", task_of("book_named")))
    assert episode.outcome == "hallucinated_success"


def test_refusing_a_solvable_task_is_wrong_refusal():
    episode = run_episode(ScriptedAgent(["I cannot help with phones."]), make_env("poi", task_of("phone")))
    assert episode.outcome == "wrong_refusal"


def test_a_wrong_answer_after_calling_a_missing_tool_is_invalid_tool():
    agent = ScriptedAgent([call("lookup_phone", name="x"), "The number is 555-0000."])
    episode = run_episode(agent, make_env("poi", task_of("phone")))
    assert episode.outcome == "invalid_tool" and episode.tool_errors == 1


def test_invalid_arguments_then_wrong_answer():
    agent = ScriptedAgent([call("get_place_details", id="P001"), "The number is 555-0000."])
    assert run_episode(agent, make_env("poi", task_of("phone"))).outcome == "invalid_arguments"


def test_the_step_limit_ends_an_episode():
    agent = ScriptedAgent([call("get_weather", city="Turin", day="monday")])
    episode = run_episode(agent, make_env("poi", task_of("weather")), max_steps=3)
    assert episode.outcome == "step_limit" and len(episode.steps) == 3


def test_a_write_answer_needs_the_right_write_and_its_code():
    task = task_of("book_named")
    book = task.plan[-1]
    right = ScriptedAgent([call("book_place", **book.args), "Done."])
    assert run_episode(right, make_env("poi", task)).outcome == "wrong_answer"  # the code was not quoted
    env = make_env("poi", task)
    code = env.call("book_place", dict(book.args)).content["code"]
    quoted = ScriptedAgent([call("book_place", **book.args), f"Booked, code {code}."])
    assert run_episode(quoted, make_env("poi", task)).outcome == "success"
    wrong_people = {**book.args, "people": book.args["people"] % 8 + 1}
    other = ScriptedAgent([call("book_place", **wrong_people), f"Booked, code {code}."])
    assert run_episode(other, make_env("poi", task)).outcome == "hallucinated_success"


@pytest.mark.parametrize("family", ["phone", "best_rated", "weather"])
def test_a_right_answer_succeeds(family):
    task = task_of(family)
    agent = ScriptedAgent([" ".join(call(c.tool, **c.args) for c in task.plan), " and ".join(task.answer.values())])
    assert run_episode(agent, make_env("poi", task)).outcome == "success"
