"""The words perturbations draw from, in a ``train`` pool (for PAFT data) and an ``eval`` pool.

The two pools share nothing, so an agent fine-tuned on perturbations never meets the surface
forms it is evaluated on; ``tests/sandbox/test_perturbations_registry.py`` checks it. Query
paraphrases live with their families (``Family.paraphrases[pool]``); a task of no such family is reworded
by the frames and synonyms of ``REQUEST_FRAMES`` and the tables after it.

Rewritten descriptions keep one capability word of their tool (``CAPABILITIES``), as real API
docs do, so that a reader of descriptions can tell what each tool does whatever its name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Pools = Mapping[str, tuple[Any, ...]]


def _pools(train: tuple, eval_: tuple) -> dict[str, tuple]:
    return {"train": train, "eval": eval_}


# Tier 1: names and descriptions.
TOOL_SYNONYMS: dict[str, Pools] = {
    "search_places": _pools(("list_venues", "lookup_spots"), ("browse_locations", "query_establishments")),
    "find_place": _pools(("resolve_venue", "locate_spot"), ("identify_location", "match_establishment")),
    "get_place_details": _pools(("venue_info", "fetch_spot_profile"), ("location_facts", "establishment_card")),
    "get_opening_hours": _pools(("venue_schedule", "spot_timetable"), ("location_open_times", "business_hours")),
    "get_distance": _pools(("measure_gap", "route_length"), ("span_between", "separation_km")),
    "get_weather": _pools(("forecast_lookup", "sky_report"), ("climate_outlook", "meteo_check")),
    "book_place": _pools(("reserve_venue", "make_reservation"), ("secure_table", "hold_spot")),
    "get_booking": _pools(("show_reservation", "reservation_info"), ("view_hold", "booking_record")),
    "cancel_booking": _pools(("drop_reservation", "void_reservation"), ("release_hold", "annul_booking")),
    "find_patient": _pools(("resolve_patient", "locate_person"), ("identify_client", "match_patient")),
    "get_patient_record": _pools(("patient_chart", "fetch_chart"), ("medical_file", "health_summary")),
    "get_lab_results": _pools(("lab_readout", "test_values"), ("assay_report", "pathology_result")),
    "check_interaction": _pools(("drug_clash", "combo_risk"), ("medicine_conflict", "pairing_check")),
    "find_doctors": _pools(("list_physicians", "lookup_clinicians"), ("browse_specialists", "query_practitioners")),
    "get_doctor_hours": _pools(("physician_schedule", "clinic_timetable"), ("practitioner_times", "surgery_hours")),
    "book_appointment": _pools(("schedule_visit", "reserve_slot"), ("arrange_consult", "set_visit")),
}
DESCRIPTION_REWRITES: dict[str, Pools] = {
    "search_places": _pools(
        ("Lists the places of one category in a city, highest rated first.",),
        ("Returns a city's venues of a given category, sorted by rating, best first.",),
    ),
    "find_place": _pools(
        ("Resolves a place name in a city to the place's id.",),
        ("Gives the id of a place, given its name and city.",),
    ),
    "get_place_details": _pools(
        ("Phone number, address, rating and price level for a place.",),
        ("Contact card of a place: phone, street address, rating, price.",),
    ),
    "get_opening_hours": _pools(
        ("When a place is open on a given weekday (opening times).",),
        ("A place's opening times for one day of the week.",),
    ),
    "get_distance": _pools(
        ("How far apart two places are, with walking minutes.",),
        ("Kilometres and minutes on foot separating two places.",),
    ),
    "get_weather": _pools(
        ("Forecast and temperature for a city on a weekday.",),
        ("Expected weather conditions in a city on a given day.",),
    ),
    "book_place": _pools(
        ("Reserves a table or room at a place; gives a booking id and code.",),
        ("Makes a reservation at a place and returns its id and confirmation code.",),
    ),
    "get_booking": _pools(("Shows the details of an existing booking.",), ("Displays a booking made earlier.",)),
    "cancel_booking": _pools(
        ("Cancels a booking and gives a cancellation code.",),
        ("Calls off a booking; returns a cancel code.",),
    ),
    "find_patient": _pools(
        ("Resolves a patient's full name and city to the patient id.",),
        ("Gives the id of a patient from their full name and city.",),
    ),
    "get_patient_record": _pools(
        ("A patient's blood group, allergies and medications.",),
        ("Medical file of a patient: blood type, allergies, current drugs.",),
    ),
    "get_lab_results": _pools(
        ("Most recent result of a laboratory test for a patient.",),
        ("A patient's newest lab measurement for one test.",),
    ),
    "check_interaction": _pools(
        ("How severe the interaction between two drugs is.",),
        ("Severity of the interaction when two medicines are combined.",),
    ),
    "find_doctors": _pools(
        ("Lists doctors with a given specialty in a city, highest rated first.",),
        ("Returns a city's physicians of one specialty, best rated first.",),
    ),
    "get_doctor_hours": _pools(
        ("When a doctor consults on a given weekday.",),
        ("A doctor's consultation times for one day of the week.",),
    ),
    "book_appointment": _pools(
        ("Schedules an appointment with a doctor; gives an appointment id and code.",),
        ("Makes a doctor's appointment for a patient and returns its id and confirmation code.",),
    ),
}
CAPABILITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cancel_booking", ("cancel",)),
    ("book_place", ("table or room", "reserv")),
    ("get_booking", ("show a booking", "shows the details", "displays a booking")),
    ("get_place_details", ("phone",)),
    ("get_opening_hours", ("opening",)),
    ("get_distance", ("distance", "how far", "kilometres")),
    ("get_weather", ("weather", "forecast")),
    ("search_places", ("category",)),
    ("get_patient_record", ("blood",)),
    ("get_lab_results", ("lab",)),
    ("check_interaction", ("interaction",)),
    ("find_doctors", ("specialty",)),
    ("get_doctor_hours", ("consult",)),
    ("book_appointment", ("appointment",)),
    ("find_place", ("its id", "place's id", "id of a place")),
    ("find_patient", ("patient id", "id of a patient")),
)
"""Canonical tool → the capability words its descriptions keep, most specific first."""
OPAQUE_PREFIXES = _pools(("t", "op"), ("fn", "x"))
NAME_NOISE_PREFIXES = _pools(("api_", "svc_"), ("ext_", "v1_"))
PARAM_SYNONYMS: dict[str, Pools] = {
    "name": _pools(("entity_name", "named_as"), ("designation", "called")),
    "city": _pools(("town", "municipality"), ("locality", "metro")),
    "category": _pools(("kind", "type_of_place"), ("genre", "sort")),
    "place_id": _pools(("venue_ref", "spot_id"), ("location_key", "site_code")),
    "day": _pools(("weekday", "on_day"), ("dow", "day_name")),
    "from_id": _pools(("origin", "start_ref"), ("source_key", "departure")),
    "to_id": _pools(("target", "end_ref"), ("dest_key", "arrival")),
    "time": _pools(("at", "clock"), ("hhmm", "slot_time")),
    "people": _pools(("party", "guests"), ("covers", "headcount")),
    "booking_id": _pools(("reservation_ref", "res_id"), ("hold_key", "booking_code")),
    "patient_id": _pools(("patient_ref", "chart_id"), ("client_key", "person_code")),
    "test": _pools(("assay", "analyte"), ("panel", "measure")),
    "drug_a": _pools(("first_drug", "med_one"), ("medicine_x", "substance_1")),
    "drug_b": _pools(("second_drug", "med_two"), ("medicine_y", "substance_2")),
    "specialty": _pools(("field", "discipline"), ("branch", "area")),
    "doctor_id": _pools(("physician_ref", "doc_id"), ("clinician_key", "practitioner_code")),
}
PARAM_DESCRIPTION_TEMPLATES = _pools(
    ("Value: {desc}.", "The {desc} to use."), ("Give the {desc} here.", "Set to: {desc}.")
)
EXTRA_PARAMS = _pools(
    (("verbosity", "how much detail to add to the reply (optional)"), ("locale", "reply language (optional)")),
    (("debug_level", "amount of debugging info to include (optional)"), ("region", "regional settings (optional)")),
)
"""Optional string parameters that schema noise adds; the tools ignore them."""
DECOY_NAMES = _pools(("{name}_legacy", "old_{name}"), ("{name}_archived", "{name}_v0"))
DECOY_DESCRIPTIONS = _pools(
    ("Deprecated: use {real} instead. {desc}",), ("Obsolete endpoint kept for old clients; use {real}. {desc}",)
)
DECOY_ERRORS = _pools(("This tool is deprecated; call {real}.",), ("Obsolete endpoint: switch to {real}.",))
DECOY_MARKERS: tuple[str, ...] = ("deprecated", "obsolete")
"""What tells a reader that a tool is a decoy, in either pool."""
LIVE_NAMES = _pools(("{name}_current",), ("{name}_latest",))
"""New names of the live tools when their old names become decoys."""

# Tier 2: feedback.
RUNTIME_ERRORS = _pools(
    ("Service temporarily unavailable, try again.", "Upstream timeout; please retry."),
    ("Temporary glitch, retry the call.", "Backend busy right now; the same call may work next time."),
)
FATAL_ERRORS = _pools(
    ("This service has been permanently discontinued.", "Account closed; this tool will never answer again."),
    ("Access revoked for good; no retry can succeed.", "The provider shut this endpoint down permanently."),
)
RATE_LIMIT_ERRORS = _pools(
    ("Rate limit reached: retry after {n} s (call {wait} first).",),
    ("Too many requests. Wait {n} s with {wait}, then try again.",),
)
WAIT_TOOLS = _pools(
    (("pause_calls", "Waits the given number of seconds before you call again (use after a rate limit)."),),
    (("hold_requests", "Sleeps for some seconds so that rate-limited calls can be retried."),),
)
REDIRECT_NAMES = _pools(("{name}_v2", "new_{name}"), ("{name}_next", "{name}_svc"))
REDIRECT_DESCRIPTIONS = _pools(("Successor of {name}; same arguments.",), ("Replacement endpoint for {name}.",))
REDIRECT_ERRORS = _pools(
    ("This tool has moved: call {target} instead.",), ("Endpoint relocated; use {target} from now on.",)
)
MISSING_NOTES = _pools(
    (("note", "some fields are missing; call again for the full record"),),
    (("status", "incomplete answer, retry to get the rest"),),
)
CODE_FORMATS = _pools(("{body}-{prefix}", "{prefix}{body}"), ("{prefix}/{body}", "{body}.{prefix}"))
FIELD_SYNONYMS: dict[str, Pools] = {
    "results": _pools(("items",), ("matches",)),
    "id": _pools(("ref",), ("uid",)),
    "name": _pools(("title",), ("label",)),
    "phone": _pools(("telephone",), ("phone_number",)),
    "hours": _pools(("opening_times",), ("open_hours",)),
    "forecast": _pools(("conditions",), ("outlook",)),
    "temp_c": _pools(("temperature_c",), ("celsius",)),
    "km": _pools(("distance_km",), ("kilometres",)),
    "code": _pools(("confirmation",), ("verification",)),
    "blood_type": _pools(("blood_group",), ("bloodtype",)),
    "value": _pools(("measurement",), ("reading",)),
    "severity": _pools(("level",), ("risk",)),
    "rating": _pools(("score",), ("stars",)),
    "booking_id": _pools(("reservation_id",), ("booking_ref",)),
    "appointment_id": _pools(("visit_id",), ("appointment_ref",)),
    "walk_min": _pools(("walking_minutes",), ("minutes_on_foot",)),
}
ENVELOPES = _pools(("data",), ("payload",))

# Tier 3: structure.
TOKEN_TOOLS = _pools(
    (("issue_token", "Issues the access token that some tools require."),),
    (("open_session", "Opens a session and returns the pass some tools need."),),
)
TOKEN_PARAMS = _pools((("token", "access token from {tool}"),), (("session_pass", "session pass returned by {tool}"),))
MERGED_NAMES = _pools(("{name}_by_name",), ("{name}_from_name",))
MERGED_NOTES = _pools(("Takes the name and city instead of an id.",), ("No id needed: give the name and city.",))
MERGED_PLAN_NOTES = _pools(
    ("Takes what {lookup} takes, instead of the id it returns.",), ("No id needed: give the arguments of {lookup}.",)
)
INVERSION_PARAMS = _pools(("request",), ("ticket",))
INVERSION_NOTES = _pools(
    ("Call this first, without an id: it returns a {param}; then pass it to {finder}, which gives the result.",),
    ("Step 1 of 2: returns a {param} for {finder}, which then runs it for the place or person.",),
)
INVERSION_FINDER_NOTES = _pools(
    ("Given a {param} from {tools}, returns that result for the one found.",),
    ("Pass a {param} from {tools} to get that answer for the match.",),
)
NESTED_PARAMS = _pools(
    (("query", "all arguments of this call, as one object"),), (("input_args", "the call's arguments, grouped"),)
)
SLOT_PARAMS = _pools((("when", "weekday and time as 'DAY HH:MM', e.g. 'monday 19:00'"),),
                     (("slot", "weekday and time as 'DAY@HH:MM', e.g. 'monday@19:00'"),))  # fmt: skip
PAIR_PARAMS = _pools((("{a}_{b}", "{a} and {b} as one value, '{A}|{B}'"),),
                     (("{a}_with_{b}", "{a} and {b} together, written '{A}+{B}'"),))  # fmt: skip
"""The joined argument of ``argument_restructuring`` at severity 2 on a domain without a pair of its own."""

# Query shift.
FILLERS = _pools(("um,", "like,", "you know,", "basically"), ("er,", "well,", "sort of", "honestly"))
REDUNDANT_SENTENCES = _pools(
    (
        "I'm travelling with my sister next month.",
        "My phone battery is almost dead.",
        "Last year I visited three museums in one day.",
        "I prefer window seats on trains.",
    ),
    (
        "The coffee this morning was too strong.",
        "We just got a new printer at the office.",
        "My cousin collects old stamps.",
        "It has been a long week at work.",
    ),
)

# The request in other words, for a task of no family with held-out phrasings (``perception/rewording.py``).
REQUEST_FRAMES = _pools(
    ("Could you {x}?", "Please {x}.", "I need you to {x}."),
    ("Can you {x}?", "I'd like you to {x}.", "Would you be so kind as to {x}?"),
)
"""A request (``{x}``: what it asks done, starting with its verb) restated: a question becomes an imperative and
the reverse."""
QUESTION_FRAMES = _pools(
    ("Quick question: {q}", "I'd like to know this: {q}"),
    ("Something I'm wondering: {q}", "Help me with this one: {q}"),
)
STATEMENT_FRAMES = _pools(
    ("Here is my request. {q}", "Something I need help with. {q}"),
    ("I have a request for you. {q}", "Here's what I'm after. {q}"),
)
"""What precedes a request none of whose sentences is a question or starts with a verb."""
REQUEST_SWAPS: dict[str, Pools] = {
    "tell me": _pools(("let me know",), ("share with me",)),
    "give me": _pools(("provide me with",), ("hand me",)),
    "i want": _pools(("I would like",), ("I'd love",)),
    "assist": _pools(("aid",), ("lend a hand",)),
    "retrieve": _pools(("pull up",), ("bring up",)),
    "purchase": _pools(("buy",), ("acquire",)),
    "buy": _pools(("purchase",), ("obtain",)),
    "immediately": _pools(("right away",), ("without delay",)),
    "details": _pools(("particulars",), ("specifics",)),
}
"""Phrases of requests and their synonyms, beside the verbs of ``WORD_SYNONYMS`` that read as well in a request
(``perception/rewording.py`` names them)."""

# Generic rules: what a domain without vocabulary of its own gets (see ``DomainVocabulary``).
WORD_SYNONYMS: dict[str, Pools] = {
    "get": _pools(("fetch",), ("retrieve",)),
    "search": _pools(("query",), ("scan",)),
    "find": _pools(("locate",), ("discover",)),
    "list": _pools(("enumerate",), ("catalog",)),
    "lookup": _pools(("resolve",), ("identify",)),
    "show": _pools(("display",), ("present",)),
    "check": _pools(("verify",), ("inspect",)),
    "create": _pools(("make",), ("open",)),
    "add": _pools(("append",), ("insert",)),
    "delete": _pools(("erase",), ("purge",)),
    "remove": _pools(("drop",), ("strip",)),
    "update": _pools(("modify",), ("revise",)),
    "set": _pools(("assign",), ("configure",)),
    "send": _pools(("dispatch",), ("transmit",)),
    "cancel": _pools(("revoke",), ("withdraw",)),
    "reserve": _pools(("hold",), ("earmark",)),
    "book": _pools(("volume",), ("title_record",)),
    "make": _pools(("build",), ("produce",)),
    "read": _pools(("load",), ("peek",)),
    "write": _pools(("save",), ("store",)),
    "move": _pools(("shift",), ("relocate",)),
    "run": _pools(("execute",), ("launch",)),
}
"""Word-for-word synonyms of the words tool names are made of (verbs mostly). A rule, not a thesaurus: a
name none of whose words is here keeps its name, and ``semantic_renaming`` does not apply to a domain
where no tool name changes."""
DESCRIPTION_FRAMES = _pools(("In short: {desc}", "Purpose: {desc}"), ("What it does: {desc}", "Summary: {desc}"))
"""How a description without a hand-written rewrite is reworded: framed, with ``PHRASE_SWAPS`` applied."""
PHRASE_SWAPS: dict[str, Pools] = {
    "returns": _pools(("hands back",), ("yields",)),
    "gives": _pools(("provides",), ("supplies",)),
    "one": _pools(("a single",), ("exactly one",)),
    "search": _pools(("look through",), ("scan",)),
    "everything": _pools(("all the facts",), ("every detail",)),
}
PARAM_FORMS = _pools(("{param}_val", "in_{param}"), ("{param}_arg", "p_{param}"))
"""How a parameter without hand-written synonyms is renamed by ``schema_noise``."""
FIELD_FORMS = _pools(("{key}_val",), ("fld_{key}",))
"""How a result key without hand-written synonyms is renamed by ``format_shift``."""

VOCABULARIES: dict[str, Any] = {
    name: value for name, value in globals().items() if name.isupper() and name not in ("CAPABILITIES", "DECOY_MARKERS")
}
"""Every pooled vocabulary by name, for the disjointness test."""


def pool_words(vocabulary: Any, pool: str) -> set[str]:
    """Every string of one pool of a vocabulary (pools nested in a dict are gathered)."""
    if isinstance(vocabulary, Mapping) and set(vocabulary) == {"train", "eval"}:
        return set(_strings(vocabulary[pool]))
    return {s for inner in vocabulary.values() for s in pool_words(inner, pool)}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [s for item in value for s in _strings(item)]


# What our two domains know about their own tools. A domain without it gets the generic rules above.

CONSUMERS: dict[str, tuple[str, str]] = {
    "get_place_details": ("find_place", "place_id"),
    "get_opening_hours": ("find_place", "place_id"),
    "book_place": ("find_place", "place_id"),
    "get_patient_record": ("find_patient", "patient_id"),
    "get_lab_results": ("find_patient", "patient_id"),
    "book_appointment": ("find_patient", "patient_id"),
}
"""Tools that take an id which a lookup by name returns: tool → (lookup, id parameter)."""


@dataclass(frozen=True)
class DomainVocabulary:
    """What a domain tells the perturbations and the oracle about its own words; every field may stay empty.

    A domain supplies it as ``Domain.vocabulary`` (read with ``getattr``); POI and medical get theirs from
    this module. Where a field is empty the generic rules stand in: synonyms by ``WORD_SYNONYMS``,
    rewrites by ``DESCRIPTION_FRAMES``, tools found by how close a description is to the clean one,
    dependencies from the gold plan.
    """

    tool_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    description_rewrites: Mapping[str, Pools] = field(default_factory=dict)
    capabilities: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Tool → the words its descriptions keep (the oracle finds tools by them)."""
    param_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    field_synonyms: Mapping[str, Pools] = field(default_factory=dict)
    consumers: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Tool → (the lookup by name that gives its id, the id parameter)."""
    finder: str | None = None
    """The lookup by name and city, whose not-found makes an entity nonexistent."""
    entity: str = ""
    """What the finder finds, in words ("place")."""
    unit_tools: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    """Searches ranked by ``rank_by``: ``behaviour_change`` pages them A to Z."""
    rank_by: str | None = None
    entities: Callable[[Any], Iterable[Any]] | None = None
    """The finder's entities in a world (rows with ``name``, ``city``, ``id``): what an underspecified query
    and a nonexistent entity need to know who bears a name."""
    resolve: Callable[[Any, str, str], Any] | None = None
    """The entity of a world with a name in a city, or ``None`` (what the finder does, without a call)."""
    compound: tuple[str, str] | None = None
    """The two arguments ``argument_restructuring`` joins at severity 2 (written as ``SLOT_PARAMS`` shows)."""
    transfer: str | None = None
    """The held-out domain ``domain_transfer`` swaps this one's tasks for."""


def _ours(finder: str, entity: str, entities: Callable, resolve: Callable, transfer: str | None) -> DomainVocabulary:
    return DomainVocabulary(
        TOOL_SYNONYMS, DESCRIPTION_REWRITES, CAPABILITIES, PARAM_SYNONYMS, FIELD_SYNONYMS,
        {t: c for t, c in CONSUMERS.items() if c[0] == finder}, finder, entity,
        ("get_distance", "get_weather"), ("search_places", "find_doctors"), "rating", entities, resolve,
        ("day", "time"), transfer,
    )  # fmt: skip


_OURS = {
    "poi": _ours("find_place", "place", lambda w: w.places.values(), lambda w, n, c: w.by_name(n, c), "medical"),
    "medical": _ours(
        "find_patient", "patient", lambda w: w.patients.values(), lambda w, n, c: w.patient_by_name(n, c), None
    ),
}


def vocabulary(domain: Any) -> DomainVocabulary | None:
    """The vocabulary of ``domain`` (a Domain or its name): its own, ours for POI and medical, else ``None``."""
    own = getattr(domain, "vocabulary", None)
    if own is not None:
        return own
    return _OURS.get(domain if isinstance(domain, str) else getattr(domain, "name", ""))
