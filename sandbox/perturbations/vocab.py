"""The words perturbations draw from, in a ``train`` pool (for PAFT data) and an ``eval`` pool.

The two pools share nothing, so an agent fine-tuned on perturbations never meets the surface
forms it is evaluated on; ``tests/sandbox/test_perturbations_registry.py`` checks it. Query
paraphrases live with their families (``Family.paraphrases[pool]``); a task of no such family is reworded
by the frames and synonyms of ``REQUEST_FRAMES`` and the tables after it.

A domain's own words (synonyms of its tool and parameter names, rewrites of its descriptions) are its own, declared
as ``Domain.vocabulary`` (:class:`~sandbox.vocabulary.DomainVocabulary`; ours in their own folders under
``sandbox/domains``); where a domain declares none, the generic rules here stand in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sandbox.domains import get_domain
from sandbox.vocabulary import DomainVocabulary, Pools, pools

# Tier 1: names and descriptions.
OPAQUE_PREFIXES = pools(("t", "op"), ("fn", "x"))
NAME_NOISE_PREFIXES = pools(("api_", "svc_"), ("ext_", "v1_"))
PARAM_DESCRIPTION_TEMPLATES = pools(
    ("Value: {desc}.", "The {desc} to use."), ("Give the {desc} here.", "Set to: {desc}.")
)
EXTRA_PARAMS = pools(
    (("verbosity", "how much detail to add to the reply (optional)"), ("locale", "reply language (optional)")),
    (("debug_level", "amount of debugging info to include (optional)"), ("region", "regional settings (optional)")),
)
"""Optional string parameters that schema noise adds; the tools ignore them."""
DECOY_NAMES = pools(("{name}_legacy", "old_{name}"), ("{name}_archived", "{name}_v0"))
DECOY_DESCRIPTIONS = pools(
    ("Deprecated: use {real} instead. {desc}",), ("Obsolete endpoint kept for old clients; use {real}. {desc}",)
)
DECOY_ERRORS = pools(("This tool is deprecated; call {real}.",), ("Obsolete endpoint: switch to {real}.",))
DECOY_MARKERS: tuple[str, ...] = ("deprecated", "obsolete")
"""What tells a reader that a tool is a decoy, in either pool."""
LIVE_NAMES = pools(("{name}_current",), ("{name}_latest",))
"""New names of the live tools when their old names become decoys."""

# Tier 2: feedback.
RUNTIME_ERRORS = pools(
    ("Service temporarily unavailable, try again.", "Upstream timeout; please retry."),
    ("Temporary glitch, retry the call.", "Backend busy right now; the same call may work next time."),
)
FATAL_ERRORS = pools(
    ("This service has been permanently discontinued.", "Account closed; this tool will never answer again."),
    ("Access revoked for good; no retry can succeed.", "The provider shut this endpoint down permanently."),
)
RATE_LIMIT_ERRORS = pools(
    ("Rate limit reached: retry after {n} s (call {wait} first).",),
    ("Too many requests. Wait {n} s with {wait}, then try again.",),
)
WAIT_TOOLS = pools(
    (("pause_calls", "Waits the given number of seconds before you call again (use after a rate limit)."),),
    (("hold_requests", "Sleeps for some seconds so that rate-limited calls can be retried."),),
)
REDIRECT_NAMES = pools(("{name}_v2", "new_{name}"), ("{name}_next", "{name}_svc"))
REDIRECT_DESCRIPTIONS = pools(("Successor of {name}; same arguments.",), ("Replacement endpoint for {name}.",))
REDIRECT_ERRORS = pools(
    ("This tool has moved: call {target} instead.",), ("Endpoint relocated; use {target} from now on.",)
)
MISSING_NOTES = pools(
    (("note", "some fields are missing; call again for the full record"),),
    (("status", "incomplete answer, retry to get the rest"),),
)
CODE_FORMATS = pools(("{body}-{prefix}", "{prefix}{body}"), ("{prefix}/{body}", "{body}.{prefix}"))
ENVELOPES = pools(("data",), ("payload",))

# Tier 3: structure.
TOKEN_TOOLS = pools(
    (("issue_token", "Issues the access token that some tools require."),),
    (("open_session", "Opens a session and returns the pass some tools need."),),
)
TOKEN_PARAMS = pools((("token", "access token from {tool}"),), (("session_pass", "session pass returned by {tool}"),))
MERGED_NAMES = pools(("{name}_by_name",), ("{name}_from_name",))
MERGED_NOTES = pools(("Takes the name and city instead of an id.",), ("No id needed: give the name and city.",))
MERGED_PLAN_NOTES = pools(
    ("Takes what {lookup} takes, instead of the id it returns.",), ("No id needed: give the arguments of {lookup}.",)
)
INVERSION_PARAMS = pools(("request",), ("ticket",))
INVERSION_NOTES = pools(
    ("Call this first, without an id: it returns a {param}; then pass it to {finder}, which gives the result.",),
    ("Step 1 of 2: returns a {param} for {finder}, which then runs it for the place or person.",),
)
INVERSION_FINDER_NOTES = pools(
    ("Given a {param} from {tools}, returns that result for the one found.",),
    ("Pass a {param} from {tools} to get that answer for the match.",),
)
NESTED_PARAMS = pools(
    (("query", "all arguments of this call, as one object"),), (("input_args", "the call's arguments, grouped"),)
)
SLOT_PARAMS = pools((("when", "weekday and time as 'DAY HH:MM', e.g. 'monday 19:00'"),),
                     (("slot", "weekday and time as 'DAY@HH:MM', e.g. 'monday@19:00'"),))  # fmt: skip
PAIR_PARAMS = pools((("{a}_{b}", "{a} and {b} as one value, '{A}|{B}'"),),
                     (("{a}_with_{b}", "{a} and {b} together, written '{A}+{B}'"),))  # fmt: skip
"""The joined argument of ``argument_restructuring`` at severity 2 on a domain without a pair of its own."""

# Query shift.
FILLERS = pools(("um,", "like,", "you know,", "basically"), ("er,", "well,", "sort of", "honestly"))
REDUNDANT_SENTENCES = pools(
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
REQUEST_FRAMES = pools(
    ("Could you {x}?", "Please {x}.", "I need you to {x}."),
    ("Can you {x}?", "I'd like you to {x}.", "Would you be so kind as to {x}?"),
)
"""A request (``{x}``: what it asks done, starting with its verb) restated: a question becomes an imperative and
the reverse."""
QUESTION_FRAMES = pools(
    ("Quick question: {q}", "I'd like to know this: {q}"),
    ("Something I'm wondering: {q}", "Help me with this one: {q}"),
)
STATEMENT_FRAMES = pools(
    ("Here is my request. {q}", "Something I need help with. {q}"),
    ("I have a request for you. {q}", "Here's what I'm after. {q}"),
)
"""What precedes a request none of whose sentences is a question or starts with a verb."""
REQUEST_SWAPS: dict[str, Pools] = {
    "tell me": pools(("let me know",), ("share with me",)),
    "give me": pools(("provide me with",), ("hand me",)),
    "i want": pools(("I would like",), ("I'd love",)),
    "assist": pools(("aid",), ("lend a hand",)),
    "retrieve": pools(("pull up",), ("bring up",)),
    "purchase": pools(("buy",), ("acquire",)),
    "buy": pools(("purchase",), ("obtain",)),
    "immediately": pools(("right away",), ("without delay",)),
    "details": pools(("particulars",), ("specifics",)),
}
"""Phrases of requests and their synonyms, beside the verbs of ``WORD_SYNONYMS`` that read as well in a request
(``perception/rewording.py`` names them)."""

# Generic rules: what a domain without vocabulary of its own gets (see ``DomainVocabulary``).
WORD_SYNONYMS: dict[str, Pools] = {
    "get": pools(("fetch",), ("retrieve",)),
    "search": pools(("query",), ("scan",)),
    "find": pools(("locate",), ("discover",)),
    "list": pools(("enumerate",), ("catalog",)),
    "lookup": pools(("resolve",), ("identify",)),
    "show": pools(("display",), ("present",)),
    "check": pools(("verify",), ("inspect",)),
    "create": pools(("make",), ("open",)),
    "add": pools(("append",), ("insert",)),
    "delete": pools(("erase",), ("purge",)),
    "remove": pools(("drop",), ("strip",)),
    "update": pools(("modify",), ("revise",)),
    "set": pools(("assign",), ("configure",)),
    "send": pools(("dispatch",), ("transmit",)),
    "cancel": pools(("revoke",), ("withdraw",)),
    "reserve": pools(("hold",), ("earmark",)),
    "book": pools(("volume",), ("title_record",)),
    "make": pools(("build",), ("produce",)),
    "read": pools(("load",), ("peek",)),
    "write": pools(("save",), ("store",)),
    "move": pools(("shift",), ("relocate",)),
    "run": pools(("execute",), ("launch",)),
}
"""Word-for-word synonyms of the words tool names are made of (verbs mostly). A rule, not a thesaurus: a
name none of whose words is here keeps its name, and ``semantic_renaming`` does not apply to a domain
where no tool name changes."""
DESCRIPTION_FRAMES = pools(("In short: {desc}", "Purpose: {desc}"), ("What it does: {desc}", "Summary: {desc}"))
"""How a description without a hand-written rewrite is reworded: framed, with ``PHRASE_SWAPS`` applied."""
PHRASE_SWAPS: dict[str, Pools] = {
    "returns": pools(("hands back",), ("yields",)),
    "gives": pools(("provides",), ("supplies",)),
    "one": pools(("a single",), ("exactly one",)),
    "search": pools(("look through",), ("scan",)),
    "everything": pools(("all the facts",), ("every detail",)),
}
PARAM_FORMS = pools(("{param}_val", "in_{param}"), ("{param}_arg", "p_{param}"))
"""How a parameter without hand-written synonyms is renamed by ``schema_noise``."""
FIELD_FORMS = pools(("{key}_val",), ("fld_{key}",))
"""How a result key without hand-written synonyms is renamed by ``format_shift``."""

# Evolution: a tool surface as a server's next release changes it (sandbox.perturbations.evolution).
ADDED_PARAMS = pools(
    (("client_version", "version of the client calling", "2"), ("request_source", "who sends the request", "agent")),
    (("api_version", "version of the API to call", "2025-06"), ("response_mode", "how much the reply holds", "full")),
)
"""A parameter a release adds: name, what it is, and its default (optional) or only accepted value (required)."""
ADDED_PARAM_NOTES = pools(("Accepted value: '{value}'.",), ("This release accepts only '{value}'.",))
SUCCESSOR_NAMES = pools(("{name}_new",), ("{name}_v3",))
"""The name of a deprecated tool's successor."""
DEPRECATION_NOTES = pools(
    ("Deprecated since the last release; call {new} instead. {desc}",),
    ("DEPRECATED: superseded by {new}, which takes the same arguments. {desc}",),
)
REMOVAL_ERRORS = pools(
    ("{old} was removed after its deprecation; call {new} with the same arguments.",),
    ("{old} is no longer served: it was deprecated and replaced by {new}.",),
)
SUCCESSOR_NOTES = pools(("{desc} (Takes over from {old}.)",), ("{desc} (Replaces {old}, now removed.)",))
SPLIT_NAMES = pools(("{name}_from_{first}",), ("{name}_{first}_to_{last}",))
"""The names of the two tools one tool splits into, by the first and last value of the enum each takes."""
SPLIT_ERRORS = pools(
    ("'{param}' here takes {values}; for {value} call {other}.",),
    ("This tool covers '{param}' {values} only; {value} is served by {other}.",),
)
WIDENED_VALUES = pools(("all", "other"), ("any", "unspecified"))
"""Values a release adds to an enum."""
FIELD_NOTES = pools(("Changed response fields: {pairs}.",), ("Result fields renamed in this release: {pairs}.",))
"""How a tool documents its renamed result fields; every pair is written ``old → new`` in both pools."""
CHANGELOG_NOTES = pools(("Changelog: documentation revised.",), ("Updated in this release: wording revised.",))

VOCABULARIES: dict[str, Any] = {
    name: value for name, value in globals().items() if name.isupper() and name != "DECOY_MARKERS"
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


def vocabulary(domain: Any) -> DomainVocabulary | None:
    """The vocabulary ``domain`` (a Domain, or the name of a registered one) declares, else ``None``."""
    if isinstance(domain, str):
        try:
            domain = get_domain(domain)
        except LookupError:  # a task of a domain that is not registered (built by hand): no words of its own
            return None
    return getattr(domain, "vocabulary", None)
