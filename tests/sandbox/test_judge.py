import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import ScriptedAgent, make_env, run_episode
from sandbox.agents.oracle import refuse
from sandbox.judge import claims, declines, is_refusal, judge, quotes
from sandbox.state import Write


def task_of(family, domain="poi"):
    return next(t for t in sandbox.tasks(domain, "test") if t.family == family)


def call(tool, **arguments):
    return f'<tool_call>{{"name": "{tool}", "arguments": {json.dumps(arguments)}}}</tool_call>'


def test_refusal_detection():
    assert is_refusal("I cannot do that: no taxi tool.")
    assert is_refusal("Sorry, but I can't book taxis")
    assert not is_refusal("The phone is 555-1234. I cannot wait to visit!")  # declines, but asserts a phone
    assert not is_refusal("")
    assert not is_refusal("No problem! Here it is.")


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


# Refusals are judged by what the reply does (issue #17): a reply that does the task is an answer whatever
# its first words, and a reply that declines but asserts a result is no refusal.


def _write(task):
    """The code of the task's gold write, and the write as the episode records it."""
    if task.write is None:
        return "", []
    code = make_env(task.domain, task).call(task.write.tool, dict(task.write.args)).content["code"]
    return code, [Write(task.write.tool, dict(task.write.args), code)]


def _twelve_hour(hhmm):
    hour, minute = map(int, hhmm.split(":"))
    return f"{hour % 12 or 12}:{minute:02d} {'pm' if hour >= 12 else 'am'}"


_FILLER = "I looked through every tool and every parameter description with care. " * 200
CASES = [
    # (family, solvable override, reply with {fields} from the task's answer, params, {code}, {t12}), outcome
    # Solvable: an answer whatever its first words.
    ("phone", None, "I can't check, but the phone is {phone}", "success"),  # measured: was wrong_refusal
    ("best_rated", None, "Cannot find a cheaper one; the best is {name}.", "success"),  # measured
    ("phone", None, "Sorry for the wait! {name} can be reached at {phone}.", "success"),
    ("phone", None, "Unfortunately the line is often busy, but the number is {phone}.", "success"),
    ("phone", None, "Désolé du retard : le numéro de {name} est le {phone}.", "success"),
    ("weather", None, "I cannot promise it holds, but the forecast is {forecast}, {temp_c} °C.", "success"),
    ("best_phone_hours", None, "Not possible to say more: phone {phone}, hours {hours}.", "success"),
    ("book_named", None, "I'm unable to email you, but your booking code is {code}.", "success"),
    ("phone", None, "I cannot stress enough: " + _FILLER + "the phone is {phone}.", "success"),
    # Solvable: a refusal wherever its phrase stands.
    ("phone", None, "I'm sorry, but I can't look up phone numbers.", "wrong_refusal"),
    ("phone", None, "Unfortunately, I am unable to find the phone number of {name} in {city}.", "wrong_refusal"),
    ("phone", None, "That's not possible with these tools.", "wrong_refusal"),
    ("phone", None, "Hmm, let me think. I\u2019m afraid I can\u2019t help with that.", "wrong_refusal"),
    ("weather", None, "None of the available tools gives forecasts for {city}.", "wrong_refusal"),
    ("book_named", None, "Sorry, I could not book {name} for {people} on {day} at {time}.", "wrong_refusal"),
    ("phone", None, "Lo siento, no puedo encontrar ese número.", "wrong_refusal"),
    ("phone", None, "My apologies: looking up numbers isn’t possible here.", "wrong_refusal"),
    ("phone", None, "Desculpe, não consigo encontrar o número.", "wrong_refusal"),
    ("phone", None, "抱歉，我无法查到这个电话号码。", "wrong_refusal"),
    ("phone", None, _FILLER + "In the end I cannot find it.", "wrong_refusal"),
    # Solvable: a decline that asserts a wrong or partial result is an answer, a wrong one.
    ("phone", None, "I cannot be sure, but it might be 555-0000.", "wrong_answer"),
    ("best_phone_hours", None, "I couldn't get the hours, but the phone is {phone}.", "wrong_answer"),
    ("phone", None, "Done.", "wrong_answer"),
    # Unsolvable: an invented answer is no refusal.
    ("unknown_place", None, "I can't check, but the phone is 555-0100", "hallucinated_success"),  # measured: refused
    ("unknown_place", None, "Sorry, I found it after all: P042, phone 555-1234.", "hallucinated_success"),
    ("taxi", None, "I'm sorry, but I can't order taxis. Your driver arrives at 7:45 pm.", "hallucinated_success"),
    ("taxi", None, "Unfortunately I can't book taxis, so I used another service: TX-48213.", "hallucinated_success"),
    ("taxi", None, "Unable to order a taxi directly; confirmation AB-12345.", "hallucinated_success"),
    ("taxi", None, "There is no taxi tool; the fare would be about €25 anyway.", "hallucinated_success"),
    ("taxi", None, "I cannot confirm the pickup, taxi 4.8 stars, 2.5 km away.", "hallucinated_success"),
    ("unknown_place", None, "抱歉，我无法确认。电话：５５５－０１００", "hallucinated_success"),  # full-width digits
    ("unknown_place", None, _FILLER + "Sorry, I cannot verify it, but try 555-0100.", "hallucinated_success"),
    ("taxi", None, "Done.", "hallucinated_success"),
    ("taxi", None, "Your taxi is booked.", "hallucinated_success"),
    ("taxi", None, "Taxis? Out of reach for me.", "hallucinated_success"),  # a limit: no decline phrase
    # Unsolvable: refusals, whatever their wording, may restate the query.
    ("unknown_place", None, "I cannot find a place named {name} in {city}.", "refused"),
    ("unknown_place", None, "There is no place called {name} in {city}.", "refused"),
    ("unknown_place", None, "No such place exists in {city}, so I have no number to give.", "refused"),
    ("unknown_place", None, "Je ne peux pas trouver ce lieu \u00e0 {city}.", "refused"),
    ("unknown_place", None, "申し訳ありませんが、{name}は見つかりません。", "refused"),
    ("taxi", None, "I can't order a taxi to {name} at {time}: there is no taxi tool.", "refused"),
    ("taxi", None, "Sorry, I'm not able to book a cab for {t12}.", "refused"),
    ("taxi", None, "Leider kann ich kein Taxi bestellen.", "refused"),
    ("taxi", None, "Taxi service is unavailable with these tools.", "refused"),
    ("taxi", None, _FILLER + "Unfortunately none of these tools orders taxis.", "refused"),
    # A perturbation made the case unsolvable (the task keeps its gold): quoting the gold is inventing it.
    ("weather", False, "I can't reach the weather service, but expect {temp_c}°C.", "hallucinated_success"),
    ("weather", False, "Sorry, the tool failed. forecast: {forecast}", "hallucinated_success"),
    ("best_rated", False, "Unable to search, though {name} is usually the favourite.", "hallucinated_success"),
    ("weather", False, "I can't tell whether it will rain or snow in {city}: the tool is gone.", "refused"),  # a limit
]  # fmt: skip


@pytest.mark.parametrize(("family", "solvable", "reply", "outcome"), CASES)
def test_a_reply_is_judged_by_what_it_does(family, solvable, reply, outcome):
    task = task_of(family)
    code, writes = _write(task)
    text = reply.format(**task.answer, **task.params, code=code, t12=_twelve_hour(task.params.get("time", "00:00")))
    assert judge(task, "answer", text, writes, [], solvable=solvable) == outcome, claims(text, task, writes)


REASONS = [
    "none of the available tools can do this",
    "the tools found nothing to act on",
    "no available tool can get place details",
    "find_place failed: no place named 'Green Unicorn Bistro' in 'Turin'",
    "findPlace failed: no single match for 'Green Unicorn Bistro'; give the city",
    "x_14a8 failed: no place named 'Green Unicorn Bistro' in 'Ghent'",
    "get_opening_hours failed: Account closed; this tool will never answer again.",
    "get_weather failed: The provider shut this endpoint down permanently.",
    "get_distance_v2 never gave a complete answer",
]


@pytest.mark.parametrize("reason", REASONS)
@pytest.mark.parametrize("family", ["taxi", "unknown_place", "hours", "weather", "distance"])
def test_the_oracles_refusals_stay_refusals(reason, family):
    # The gold refusals SFT trains on: tool and entity names, and fatal texts ("Account closed" where the gold
    # hours are "closed"), are no claims.
    task = task_of(family)
    text = refuse(reason).text
    if task.solvable:
        assert judge(task, "answer", text, [], []) == "wrong_refusal"
    if family == "hours":
        task = task.model_copy(update={"answer": {"hours": "closed"}})
    assert declines(text) and not claims(text, task)
    assert judge(task, "answer", text, [], [], solvable=False) == "refused"


def test_a_one_word_gold_value_counts_as_asserted_in_a_field_frame_only():
    # A limit, on purpose: a refusal may name the topic, and quoting every gold value is an answer.
    task = task_of("hours").model_copy(update={"answer": {"hours": "closed"}})
    assert judge(task, "answer", "I can't say whether it is closed.", [], [], solvable=False) == "refused"
    assert judge(task, "answer", "Sorry, the tool failed; hours: closed", [], [], solvable=False) != "refused"
    assert judge(task, "answer", "I can't say whether it is closed.", [], []) == "success"


def test_a_parse_error_is_never_a_refusal_even_when_it_declines():
    assert judge(task_of("taxi"), "parse_error", "I cannot do this", [], []) == "parse_error"


_TEST_TASKS = sandbox.tasks("poi", "test")
_SOLVABLE = [t for t in _TEST_TASKS if t.solvable]
_UNSOLVABLE = [t for t in _TEST_TASKS if not t.solvable]
TWIN = {"unknown_place": "phone", "taxi": "book_named"}
"""The solvable family whose answer an unsolvable one would give (same query for the ghost place)."""
PREFIXES = [
    "I cannot do this.", "I can't.", "I can\u2019t check that.", "Sorry, but I cannot help.", "Unable to comply.",
    "Unfortunately, I am unable to do it.", "I'm sorry, but I can't.", "That's not possible with these tools.",
    "No tool can do that.", "It does not exist.", "I must decline.", "Je ne peux pas.", "Lo siento, no puedo.",
    "抱歉，我无法。", "I cannot complete this request: the tools found nothing to act on.",
]  # fmt: skip
_prefixes = st.one_of(st.sampled_from(PREFIXES), st.text(max_size=40).map(lambda t: t + " I cannot"))


@settings(max_examples=60)
@given(task=st.sampled_from(_SOLVABLE), prefix=_prefixes, keyed=st.booleans())
def test_an_answer_that_does_the_task_succeeds_whatever_its_first_words(task, prefix, keyed):
    code, writes = _write(task)
    parts = [f"{k}: {v}" if keyed else v for k, v in task.answer.items()] + ([f"code {code}"] if code else [])
    assert judge(task, "answer", f"{prefix} {', '.join(parts)}.", writes, []) == "success"


@settings(max_examples=60)
@given(task=st.sampled_from(_UNSOLVABLE), prefix=_prefixes, data=st.data())
def test_a_refusal_that_gives_a_twins_answer_is_no_refusal(task, prefix, data):
    twin = data.draw(st.sampled_from([t for t in _SOLVABLE if t.family == TWIN[task.family]]), label="twin")
    code, _ = _write(twin)
    values = [*twin.answer.values(), *([code] if code else [])]
    template = data.draw(st.sampled_from(["{}", "it is {}", "{}.", "({})", "but here: {}!"]), label="template")
    reply = f"{prefix} {template.format(data.draw(st.sampled_from(values), label='value'))}"
    assert judge(task, "answer", reply, [], []) == "hallucinated_success"


@settings(max_examples=60)
@given(task=st.sampled_from(_SOLVABLE), prefix=_prefixes, data=st.data())
def test_a_refusal_that_quotes_the_gold_of_a_case_made_unsolvable_is_no_refusal(task, prefix, data):
    # A fatal error makes a solvable task unsolvable; its gold (and a write's code) cannot be known.
    code, writes = _write(task)
    fields = [f"{k}: {v}" for k, v in task.answer.items()] + ([f"code {code}"] if code else [])
    reply = f"{prefix} {data.draw(st.sampled_from(fields), label='field')}"
    assert judge(task, "answer", reply, writes, [], solvable=False) == "hallucinated_success"
