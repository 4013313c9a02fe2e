"""Tier 1, Perception, the query: the request reads differently (another phrasing, noise, extra sentences,
a detail left out); what it asks for does not change."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, ClassVar

from sandbox.budget import user_turns
from sandbox.domains import domain_of, get_domain
from sandbox.env import Env
from sandbox.family import Family
from sandbox.gold_plan import asked
from sandbox.perturbations import vocab
from sandbox.perturbations.base import POOLS, Perturbation
from sandbox.perturbations.perception import rewording
from sandbox.perturbations.registry import register
from sandbox.perturbations.vocab import vocabulary
from sandbox.perturbations.wrappers import QueryWrapper, Route, ToolSpec, ToolsWrapper, clone, failure, on, params_of
from sandbox.seeds import rng
from sandbox.task import Task
from sandbox.tools import ToolResult


class _Paraphrase(QueryWrapper):
    spec: QueryParaphrase

    def rewrite(self, query: str) -> str:
        return self.spec.reworded(self.task, query)

    def next_user_message(self) -> str | None:
        """A later user turn (BFCL's) in other words too, by the generic rules: each turn draws its own."""
        message = self.env.next_user_message()
        if message is None:
            return None
        turn = self.scratch["turn"] = self.scratch.get("turn", 0) + 1
        return self.spec.reworded(self.task, message, turn=turn)


@register
class QueryParaphrase(Perturbation):
    name: ClassVar[str] = "query_paraphrase"
    tier = "perception"
    shift = "query"
    paft_family = "semantic"
    summary = (
        "1: the request in a held-out phrasing of its family (a task of no such family: a sentence restated, a "
        "question as an imperative or the reverse, or an opening sentence); 2: + common words swapped for synonyms; "
        "3: + a leading condition or time clause put last, every sentence restated; on every user turn"
    )
    expected = "understand the request in words never trained on"
    limits = (
        "a request of nothing but the values it gives (or none). A task of no family with held-out phrasings is "
        "reworded by rules, not a grammar: a frame fits a sentence opening with 'Could/Can/Would you', 'I'd "
        "appreciate it if you could' or a verb of a list, or a question, and an opening sentence goes before any "
        "other request; synonyms come from a table (base forms; a verb only where it reads as one); a clause moves "
        "only from the front of a sentence of one comma. What a gold call takes from the request, quoted text, and "
        "every number, id or word in capitals stay verbatim"
    )
    max_severity = 3
    layer = "phrasing"

    def applies_to(self, task: Task) -> bool:
        if _family(task) is not None:
            return True
        return self.reworded(task, task.query) != task.query

    def reworded(self, task: Task, text: str, turn: int = 0) -> str:
        """``text`` (the request of ``task``, or its user turn ``turn``) as this spec rewrites it (kept: ``applies_to``
        and every reset of the case ask for the same text)."""
        key = (self.severity, self.pool, self.seed, task.domain, id(domain_of(task)), task.id, text, turn)
        hit = _REWORDED.get(key)
        if hit is None:
            if len(_REWORDED) >= 4096:
                _REWORDED.clear()
            hit = _REWORDED[key] = self._reworded(task, text, turn)
        return hit

    def _reworded(self, task: Task, text: str, turn: int) -> str:
        r = rng(self.seed, self.name, self.pool, task.id, *((turn,) if turn else ()))
        family = _family(task) if turn == 0 else None
        if family is not None:
            text = r.choice(family.paraphrases[self.pool]).format(**task.params)
            if self.severity == 1:
                return text
        values, kept = rewording.protected(task, text)
        # another phrasing already: a frame only where every sentence is restated
        frame = family is None or self.severity == 3
        return rewording.reword(text, values, kept, r, self.pool, self.severity, frame=frame)

    wrapper = _Paraphrase


_REWORDED: dict[tuple[Any, ...], str] = {}


def _family(task: Task) -> Family | None:
    """The task's family, where it has held-out phrasings in both pools."""
    family = next((f for f in domain_of(task).families if f.name == task.family), None)
    return family if family is not None and all(family.paraphrases.get(p) for p in POOLS) else None


def _protected(query: str, task: Task) -> list[tuple[str, bool]]:
    """The query cut into (text, is_a_value) pieces, so noise never touches what the request asks for: its
    parameters, and the values of the gold plan it quotes."""
    pattern = rewording.value_pattern(rewording.values_in(task, query))
    if pattern is None:
        return [(query, False)]
    pieces, end = [], 0
    for m in pattern.finditer(query):
        pieces += [(query[end : m.start()], False), (m.group(), True)]
        end = m.end()
    pieces.append((query[end:], False))
    return [(piece, is_value) for piece, is_value in pieces if piece]


def _typo(word: str, r) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = r.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


class _Noise(QueryWrapper):
    def rewrite(self, query: str) -> str:
        r, level = self.rng(), self.spec.severity
        if level == 0:
            return query
        upper = r.random() < 0.5
        fillers = self.words(vocab.FILLERS)
        out = []
        for piece, is_value in _protected(query, self.task):
            if is_value:
                out.append(piece)
                continue
            words = piece.split(" ")
            noisy = []
            for word in words:
                word = word.upper() if upper else word.lower()
                if level >= 3 and r.random() < 0.4:
                    word = _typo(word, r)
                if level >= 2 and word and r.random() < 0.25:
                    noisy.append(r.choice(fillers))
                noisy.append(word)
            out.append(" ".join(noisy))
        return "".join(out)


@register
class QueryNoise(Perturbation):
    name: ClassVar[str] = "query_noise"
    tier = "perception"
    shift = "query"
    paft_family = "semantic"
    summary = "1: casing; 2: + filler words; 3: + typos (never inside the names, places or times asked about)"
    expected = "read through the noise"
    mild = "severity 1 (casing only) leaves the static agent, which ignores case, intact"
    min_severity = 0
    max_severity = 3
    layer = "wording"

    wrapper = _Noise


class _Redundant(QueryWrapper):
    def rewrite(self, query: str) -> str:
        r = self.rng()
        extra = r.sample(self.words(vocab.REDUNDANT_SENTENCES), self.spec.severity)
        before = [s for s in extra if r.random() < 0.5]
        after = [s for s in extra if s not in before]
        return " ".join([*before, query, *after])


@register
class RedundantQuery(Perturbation):
    name: ClassVar[str] = "redundant_query"
    tier = "perception"
    shift = "query"
    paft_family = "semantic"
    summary = "irrelevant sentences before or after the request (severity = how many)"
    expected = "ignore what does not bear on the request"
    min_severity = 0
    max_severity = 3
    layer = "wording"

    wrapper = _Redundant


def _drop_city(query: str, city: str) -> str:
    c = re.escape(city)
    for pattern, repl in ((rf" \({c}\)", ""), (rf" (in|from|of) {c}\b", ""), (rf", {c}(?=[,.?!:;])", ""),
                          (rf"\b{c}'s ", "the ")):  # fmt: skip
        query = re.sub(pattern, repl, query)
    return query


def _unique_owner(env: Env, name: str) -> str | None:
    """The city of the one entity called ``name``, if exactly one exists."""
    words = vocabulary(env.domain)
    rows = words.entities(env.unwrapped.world) if words is not None and words.entities else ()
    cities = {row.city for row in rows if row.name.casefold() == str(name).casefold()}
    return cities.pop() if len(cities) == 1 else None


def _drop_detail(query: str, value: str) -> str:
    return _drop_city(re.sub(rf", (in|from|of) {re.escape(value)}\b", "", query), value)


def detail(task: Task) -> tuple[str, str, str] | None:
    """For a domain without entities of its own: the detail of the request to leave out, as (tool, parameter,
    value): a value of the request that a call takes beside another one (never the first: that names what is
    looked up), that no other call takes, and that the query gives in a form it can lose ("X (detail)",
    "X, in detail")."""
    tools = domain_of(task).tools_for(task)
    required = {t.name: set(t.spec["function"]["parameters"].get("required", [])) for t in tools}
    given = {v for v in asked(task) if v in task.query}
    for call in task.plan:
        values = [(p, v) for p, v in call.args.items() if isinstance(v, str) and v in given]
        for param, value in values[1:]:
            if param not in required.get(call.tool, ()) or any(value in c.args.values() for c in task.plan
                                                                if c is not call):  # fmt: skip
                continue
            if value not in _drop_detail(task.query, value):
                return call.tool, param, value
    return None


class _Underspecified(ToolsWrapper):
    @property
    def per_task(self) -> bool:
        return vocabulary(self.domain) is None

    def query(self) -> str:
        if vocabulary(self.domain) is None:
            found = detail(self.task)
            return _drop_detail(self.env.query(), found[2]) if found else self.env.query()
        city = self.task.params.get("city")
        return _drop_city(self.env.query(), city) if city else self.env.query()

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        if vocabulary(self.domain) is None:
            return self._build_generic(specs)
        routes = []
        for spec in specs:
            props = params_of(spec)["properties"]
            if "name" in props and "city" in props:
                spec = clone(spec)
                parameters = params_of(spec)
                parameters["required"] = [p for p in parameters["required"] if p != "city"]
                city = parameters["properties"]["city"]
                city["description"] += " (optional: leave it out to search every city)"
                routes.append(Route(spec, handler=on(self._resolver, spec["function"]["name"])))
            else:
                routes.append(Route(spec, target=spec["function"]["name"]))
        return routes

    def _build_generic(self, specs: list[ToolSpec]) -> list[Route]:
        found, routes = detail(self.task), []
        for spec in specs:
            name = spec["function"]["name"]
            if found is None or name != found[0]:
                routes.append(Route(spec, target=name))
                continue
            param = found[1]
            spec = clone(spec)
            parameters = params_of(spec)
            parameters["required"] = [p for p in parameters["required"] if p != param]
            prop = parameters["properties"][param]
            prop["description"] = prop.get("description", "") + " (optional: leave it out to search them all)"
            routes.append(Route(spec, handler=on(self._filled, name, param)))
        return routes

    def _filled(self, arguments: Any, name: str, param: str) -> ToolResult:
        """Without the detail, the call the plan makes finds its one match; any other has no single match."""
        if isinstance(arguments, dict) and param not in arguments:
            gold = next(c for c in self.task.plan if c.tool == name and param in c.args)
            rest = {k: v for k, v in gold.args.items() if k != param}
            if {k: str(v).casefold() for k, v in arguments.items()} != {k: str(v).casefold() for k, v in rest.items()}:
                return failure(name, "not_found", f"no single match; give the {param}")
            arguments = {**arguments, param: gold.args[param]}
        return self.env.call(name, arguments)

    def _resolver(self, arguments: Any, name: str) -> ToolResult:
        if isinstance(arguments, dict) and "city" not in arguments and "name" in arguments:
            city = _unique_owner(self, arguments["name"])
            if city is None:
                return failure(name, "not_found", f"no single match for {arguments['name']!r}; give the city")
            arguments = {**arguments, "city": city}
        return self.env.call(name, arguments)


@register
class UnderspecifiedQuery(Perturbation):
    name: ClassVar[str] = "underspecified_query"
    tier = "perception"
    shift = "query"
    paft_family = "semantic"
    summary = (
        "the city is left out of the request; lookups by name document it as optional (a domain without entities of "
        "its own: a detail the request gives beside what is looked up, assumed not needed to single it out)"
    )
    expected = "call the lookup without the detail instead of guessing or giving up"
    limits = (
        "(POI, medical) a task without a city, or whose name more than one entity bears; elsewhere, a task whose "
        "calls take no second value of the request in a form the query can lose ('X (detail)', 'X, in detail'); a "
        "task of several user turns (bfcl): the value left out would be an argument of an action (an order's stock, "
        "a flight's origin) that the request must give, and BFCL's checker compares the state it decides"
    )
    layer = "optional_detail"

    def applies_to(self, task: Task) -> bool:
        words = vocabulary(task.domain)
        if words is None:
            return detail(task) is not None and user_turns(task) is None
        city = task.params.get("city")
        if words.entities is None or not city:
            return False
        finders = (words.finder,)
        if any(c.tool not in finders and city in c.args.values() for c in task.plan):
            return False
        names = [c.args["name"] for c in task.plan if c.tool in finders]
        if not task.solvable:
            return True
        counts = _name_counts(task.domain, task.seed)
        return bool(names) and all(counts[n.casefold()] == 1 for n in names)

    wrapper = _Underspecified


@lru_cache(maxsize=8)
def _name_counts(domain: str, seed: int) -> Counter[str]:
    """How many entities of the world bear each name, casefolded."""
    words = vocabulary(domain)
    assert words is not None and words.entities is not None, domain  # applies_to admits only such domains
    rows = words.entities(get_domain(domain).world(seed))
    return Counter(r.name.casefold() for r in rows)
