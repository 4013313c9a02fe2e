"""The request in other words, by rules that know no domain: what ``query_paraphrase`` does to a task whose
family has no held-out phrasings (a listed task of a user's domain, BFCL's turns).

Three rules, one per severity, each adding to the one before:

1. **A frame**: one sentence of the request is restated. A question that asks for something done ("Could you
   X?", "I'd appreciate it if you could X.") becomes an imperative, an imperative ("X." with X starting with a
   verb of :data:`REQUEST_VERBS`) a question; another question is introduced ("Quick question: ..."); a request
   with neither gets an opening sentence.
2. **Synonyms**: the phrases of ``vocab.REQUEST_SWAPS`` and the verbs of ``vocab.WORD_SYNONYMS`` named in
   :data:`VERBS` are swapped, every time they occur: a verb only where it reads as one (opening a sentence or after
   "to", "you", "please", "and" or a modal; not before a particle: "find out", "a comprehensive list").
3. **Order, and every sentence**: a sentence opening with a condition or a time ("If X, Y.", "Before X, Y.")
   puts it after its main clause ("Y if X."), and every sentence that a frame fits is restated.

What the request gives is never touched: the values a gold call takes from it (its parameters, the plan's
arguments it quotes), quoted text, and every token with a digit, an inner ``_ . / @ : -`` or in capitals is
masked before the rules run and put back verbatim after; no word of a gold argument is swapped. The rules are a
table and a few sentence shapes, not a grammar: a verb is known in its base form only, and a sentence of
another shape is left as it is.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from sandbox.perturbations import vocab
from sandbox.task import Task


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


VERBS: tuple[str, ...] = ("search", "show", "check", "cancel", "delete", "update", "send", "reserve", "list")
"""The verbs of ``vocab.WORD_SYNONYMS`` whose synonyms read as well in a request as in a tool's name (not "book",
"make", "run": a noun or an idiom as often as not)."""
REQUEST_VERBS = _set("""
    activate add adjust analyze apply arrange ask book borrow buy calculate call cancel change check close collect
    compare compute confirm contact convert copy count create delete determine display draft email ensure estimate
    fetch figure fill find get give go help hold identify increase keep let list locate lock log look lower make
    map mark move name notify open order pay pick place plan point post prepare print proceed provide purchase put
    raise read record remove rename renew rent report reserve retrieve return review schedule search sell send set
    share show sort start submit summarize tell track transfer turn unlock update use verify withdraw write
""")
"""Verbs whose base form opening a sentence makes it an imperative (for frames only: they are never swapped)."""
_VERB_AFTER = _set("to you please kindly and then also or i we can could would will should must let's")
_NOT_BEFORE = _set("up out off in on over back down away rid through around into by along sure ahead me us "
                        "him her them")  # fmt: skip
_PROSE_VERBS = frozenset(("assist", "retrieve", "purchase", "buy"))
"""The verbs among ``vocab.REQUEST_SWAPS``: swapped only where they read as verbs, as those of :data:`VERBS`."""
_GUARDED = frozenset(VERBS) | _PROSE_VERBS
_AUXILIARIES = _set("is are was were has have had will would should can could must may might does did do")
_LOWERABLE = _set("who what which when where why how whose whom is are was were do does did can could will "
                       "would should has have had please on in at for from to with by the a an")  # fmt: skip
"""First words a frame lowercases when it puts a sentence after itself."""
_OPENER = re.compile(
    r"^(?:(?:could|can|would|will) you|i(?: would|'d) (?:really )?appreciate it if you could"
    r"|it(?: would|'d) be (?:great|nice) if you could)(?: (?:please|kindly))?,? (?P<x>[^?]+?)(?:,? please)?[?.!]$",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(r"^(?:(?i:please|kindly),? )?(?:(?P<then>(?i:also|then|now|next|finally)),? )?"
                         r"(?P<x>(?P<verb>[A-Za-z]+)\b[^?;:]*?)(?:,? (?i:please))?[.!]?$")  # fmt: skip
_CLAUSE = re.compile(r"^(?P<marker>If|When|Once|Before|After|Unless|Whenever) (?P<cond>[^,]+), (?P<main>[^,]+?)"
                     r"(?P<end>[.!?])$")  # fmt: skip
_TOKEN = re.compile(
    r"""(?<!\w)'[^'\n]{1,200}'(?!\w)|"[^"\n]{1,200}"|`[^`\n]{1,200}`|‘[^’\n]{1,200}’|“[^”\n]{1,200}”"""
    r"|[\w.'/@:+-]*\d[\w.'/@:+-]*|\w+(?:[_./@:-]\w+)+|\b[A-Z]{2,}\b"
)
"""Value-shaped text, masked whether or not a gold call takes it: quoted strings, tokens with a digit or an
inner ``_ . / @ : -``, words in capitals."""
_SLOT = re.compile("\ue000(\\d+)\ue001")
_WORD = re.compile(r"[A-Za-z']+")
_SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)|(\n+)")


def protected(task: Task, text: str) -> tuple[list[str], set[str]]:
    """What a rewrite of ``text`` (the request of ``task``, or one of its user turns) keeps: the values it gives
    (:func:`values_in`), and the words of every value of the task, never swapped."""
    words = {v for v in task.params.values() if v}
    words |= {v for c in task.plan for v in _leaves(c.args) if isinstance(v, str)}
    return values_in(task, text), {w.casefold() for v in words for w in _WORD.findall(v)}


def values_in(task: Task, text: str) -> list[str]:
    """The values of ``task`` that ``text`` gives (its parameters, and the gold plan's arguments, strings and
    numbers, that the text quotes), longest first: what a rewrite of ``text`` keeps verbatim."""
    folded = text.casefold()
    found = {v for v in task.params.values() if v and v.casefold() in folded}
    for call in task.plan:
        for value in _leaves(call.args):
            shown = value if isinstance(value, str) else str(value)
            if shown and shown.casefold() in folded and (isinstance(value, str) or _number(shown, text)):
                found.add(shown)
    return sorted(found, key=lambda v: (-len(v), v))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if isinstance(value, bool) or value is None else [value]


def _number(shown: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(shown)}(?![\w]|\.\d)", text) is not None


def value_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern matching each of ``values`` in a text, ignoring case (a value of up to three characters only as a
    whole word: "a" is not inside "name")."""
    parts = []
    for v in sorted(set(values), key=lambda v: (-len(v), v)):
        escaped = re.escape(v)
        parts.append(rf"(?<![^\W_]){escaped}(?![^\W_])" if len(v) <= 3 else escaped)
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def reword(
    text: str, values: Iterable[str], kept: Iterable[str], r: random.Random, pool: str, level: int, frame: bool = True
) -> str:
    """``text`` by the rules up to ``level`` (1-3; see the module), drawing from ``r`` and the ``pool``'s words:
    ``values`` stay verbatim and the words in ``kept`` (casefolded) are never swapped. ``frame=False`` leaves
    frames out (the text is already another phrasing)."""
    values = list(values)
    kept = {w.casefold() for w in kept} | {w.casefold() for v in values for w in _WORD.findall(v)}
    masked, slots = _mask(text, values)
    if not re.search("[A-Za-z]", _SLOT.sub("", masked)):
        return text  # nothing but values: nothing to say otherwise
    sentences = _SENTENCE_END.split(masked)
    pieces = [p if p is not None else "" for p in sentences]
    body = list(range(0, len(pieces), 3))
    if level >= 3:
        for i in body:
            pieces[i] = _reorder(pieces[i])
    if frame:
        _frame(pieces, body, r, pool, every=level >= 3)
    out = "".join(pieces)
    if level >= 2:
        out = _swap(out, pool, kept)
    return _SLOT.sub(lambda m: slots[int(m.group(1))], out)


def _mask(text: str, values: list[str]) -> tuple[str, list[str]]:
    slots: list[str] = []

    def hide(m: re.Match[str]) -> str:
        slots.append(m.group())
        return f"\ue000{len(slots) - 1}\ue001"

    own = value_pattern(values)
    masked = own.sub(hide, text) if own is not None else text
    parts = re.split("(\ue000\\d+\ue001)", masked)
    return "".join(p if i % 2 else _TOKEN.sub(hide, p) for i, p in enumerate(parts)), slots


def _reorder(sentence: str) -> str:
    m = _CLAUSE.match(sentence)
    if m is None or len(m.group("main").split()) < 2 or m.group("main").split()[0].lower() in ("which", "who", "that"):
        return sentence
    return f"{_upper(m.group('main'))} {m.group('marker').lower()} {m.group('cond')}{m.group('end')}"


def _frame(pieces: list[str], body: list[int], r: random.Random, pool: str, every: bool) -> None:
    """Restate the request's sentence (every sentence a frame fits, if ``every``), else open the whole text."""
    kinds = {i: _kind(pieces[i]) for i in body if pieces[i].strip()}
    requests = [i for i, k in kinds.items() if k[0] == "request"]
    questions = [i for i, k in kinds.items() if k[0] == "question"]
    chosen = requests + questions if every else (requests or questions)[:1]
    changed = False
    for i in chosen:
        kind, inner = kinds[i]
        frames = vocab.REQUEST_FRAMES[pool] if kind == "request" else vocab.QUESTION_FRAMES[pool]
        options = [f.format(x=inner, q=inner) for f in frames]
        options = [o for o in options if o != pieces[i]]
        if options:
            pieces[i] = r.choice(options)
            changed = True
    if not changed and body and pieces[0].strip():
        pieces[0] = r.choice(vocab.STATEMENT_FRAMES[pool]).format(q=pieces[0])


def _kind(sentence: str) -> tuple[str, str]:
    """("request", what it asks done, from its verb), ("question", the question ready to follow a frame), or
    ("other", "")."""
    s = sentence.strip()
    m = _OPENER.match(s)
    if m is not None and m.group("x").split()[0][0].isalpha():
        return "request", _lower(m.group("x"))
    m = _IMPERATIVE.match(s)
    rest = m.group("x")[len(m.group("verb")) :] if m is not None else ""
    if m is not None and m.group("verb").lower() in REQUEST_VERBS and not rest.startswith("'"):  # not "let's"
        after = [w.lower() for w in _WORD.findall(rest)[:2]]
        if after and not set(after) & _AUXILIARIES:
            then = f"{m.group('then').lower()} " if m.group("then") else ""
            return "request", then + m.group("verb").lower() + rest
    if s.endswith("?"):
        first = s.split()[0]
        return "question", (first.lower() + s[len(first) :]) if first.lower() in _LOWERABLE else s
    return "other", ""


def _lower(x: str) -> str:
    first = x.split()[0]
    return x if first.isupper() or first == "I" or first.startswith("I'") else x[0].lower() + x[1:]


def _upper(x: str) -> str:
    return x[0].upper() + x[1:] if x and x[0].isalpha() else x


@cache
def _swaps(pool: str) -> dict[str, str]:
    table = {v: vocab.WORD_SYNONYMS[v][pool][0] for v in VERBS}
    table.update({k: v[pool][0] for k, v in vocab.REQUEST_SWAPS.items()})
    return table


@cache
def _swap_re(pool: str) -> re.Pattern[str]:
    keys = "|".join(re.escape(k) for k in sorted(_swaps(pool), key=len, reverse=True))
    return re.compile(rf"(?<![\w'\ue001])({keys})(?![\w'\ue000])", re.IGNORECASE)


def _swap(text: str, pool: str, kept: set[str]) -> str:
    table = _swaps(pool)

    def one(m: re.Match[str]) -> str:
        word = m.group(1)
        key = word.lower()
        if key in kept or (key in _GUARDED and not _reads_as_verb(text, m)):
            return word
        new = table[key]
        return _upper(new) if word[0].isupper() and not key.startswith("i ") else new

    return _swap_re(pool).sub(one, text)


def _reads_as_verb(text: str, m: re.Match[str]) -> bool:
    """Whether a verb of the table reads as one here: opening a sentence or after a word that a verb follows
    ("to", "you", "please", "and", a modal), and not before a particle ("find out") or a person it is done for."""
    head = text[: m.start()].rstrip()
    before = _WORD.findall(head)[-1:]
    after = _WORD.findall(text[m.end() : m.end() + 30])[:1]
    opens = not head or head[-1] in ".!?:;\n"
    licensed = opens or (bool(before) and head.endswith(before[0]) and before[0].lower() in _VERB_AFTER)
    return licensed and not (after and after[0].lower() in _NOT_BEFORE)
