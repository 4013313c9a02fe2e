"""Tier 1, Perception: the request and the tools look different; what they mean does not."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, ClassVar

from sandbox.domains import get_domain
from sandbox.env import Env
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import (
    QueryWrapper,
    Route,
    ToolSpec,
    ToolsWrapper,
    clone,
    failure,
    on,
    params_of,
    rename_params,
    unique_name,
    with_description,
)
from sandbox.task import Task
from sandbox.tools import ToolResult

FINDERS = ("find_place", "find_patient")


def _names(specs: list[ToolSpec]) -> list[str]:
    return [s["function"]["name"] for s in specs]


# Query shift.


class _Paraphrase(QueryWrapper):
    def rewrite(self, query: str) -> str:
        family = get_domain(self.task.domain).family(self.task.family)
        template = self.rng().choice(self.words(family.paraphrases))
        return template.format(**self.task.params)


@register
class QueryParaphrase(Perturbation):
    name: ClassVar[str] = "query_paraphrase"
    tier = "perception"
    shift = "query"
    summary = "the request in a held-out phrasing of its family"
    expected = "understand the request in words never trained on"
    layer = "phrasing"

    wrapper = _Paraphrase


def _protected(query: str, task: Task) -> list[tuple[str, bool]]:
    """The query cut into (text, is_a_value) pieces, so noise never touches what the request asks for."""
    values = sorted({v for v in task.params.values() if v}, key=len, reverse=True)
    if not values:
        return [(query, False)]
    pattern = re.compile("(" + "|".join(re.escape(v) for v in values) + ")")
    return [(piece, i % 2 == 1) for i, piece in enumerate(pattern.split(query)) if piece]


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
    """The city of the one place or patient called ``name``, if exactly one exists."""
    world = env.unwrapped.world
    rows = world.places.values() if hasattr(world, "places") else world.patients.values()
    cities = {row.city for row in rows if row.name.casefold() == str(name).casefold()}
    return cities.pop() if len(cities) == 1 else None


class _Underspecified(ToolsWrapper):
    per_task = False

    def query(self) -> str:
        city = self.task.params.get("city")
        return _drop_city(self.env.query(), city) if city else self.env.query()

    def build(self, specs: list[ToolSpec]) -> list[Route]:
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
    summary = "the city is left out of the request; lookups by name document it as optional"
    expected = "call the lookup without the detail instead of guessing or giving up"
    layer = "optional_detail"

    def applies_to(self, task: Task) -> bool:
        city = task.params.get("city")
        if not city or any(c.tool not in FINDERS and city in c.args.values() for c in task.plan):
            return False
        names = [c.args["name"] for c in task.plan if c.tool in FINDERS]
        if not task.solvable:
            return True
        counts = _name_counts(task.domain, task.seed)
        return bool(names) and all(counts[n.casefold()] == 1 for n in names)

    wrapper = _Underspecified


@lru_cache(maxsize=8)
def _name_counts(domain: str, seed: int) -> Counter[str]:
    """How many places (or patients) of the world bear each name, casefolded."""
    world = get_domain(domain).world(seed)
    rows = world.places.values() if hasattr(world, "places") else world.patients.values()
    return Counter(r.name.casefold() for r in rows)


# Tool names.


class _Renamer(ToolsWrapper):
    per_task = False
    renames_text = True

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        taken: set[str] = set()
        routes = []
        for i, spec in enumerate(specs):
            old = spec["function"]["name"]
            new = unique_name(self.new_name(old, i), taken)
            routes.append(Route(with_description(spec, spec["function"]["description"], name=new), target=old))
        return routes

    def new_name(self, old: str, index: int) -> str:
        raise NotImplementedError


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _abbreviate(word: str) -> str:
    return word if len(word) <= 3 else word[0] + re.sub(r"[aeiou]", "", word[1:])


class _NameNoise(_Renamer):
    def new_name(self, old: str, index: int) -> str:
        r, level = self.rng(old), self.spec.severity
        name = old
        if level >= 3:
            name = "_".join(_abbreviate(w) for w in name.split("_"))
        if level >= 2:
            name = r.choice(self.words(vocab.NAME_NOISE_PREFIXES)) + name
        return _camel(name) if r.random() < 0.5 or level == 1 else name.replace("_", "-")


@register
class ToolNameNoise(Perturbation):
    name: ClassVar[str] = "tool_name_noise"
    tier = "perception"
    shift = "action"
    summary = "1: camelCase or kebab-case names; 2: + a prefix; 3: + abbreviated words"
    expected = "match tools by what they do, not by the exact spelling"
    max_severity = 3
    layer = "name_noise"

    wrapper = _NameNoise


class _Synonyms(_Renamer):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = [n for n in _names(specs) if n in vocab.TOOL_SYNONYMS]
        if self.spec.severity == 1:
            names = self.rng().sample(names, (len(names) + 1) // 2)
        self._chosen = set(names)
        return super().build(specs)

    def new_name(self, old: str, index: int) -> str:
        if old not in self._chosen:
            return old
        return self.rng(old).choice(self.words(vocab.TOOL_SYNONYMS[old]))


@register
class SemanticRenaming(Perturbation):
    name: ClassVar[str] = "semantic_renaming"
    tier = "perception"
    shift = "action"
    summary = "tools renamed with synonyms (1: half of them; 2: all)"
    expected = "find each tool by its meaning"
    max_severity = 2
    layer = "renaming"

    wrapper = _Synonyms


class _Opaque(_Renamer):
    def new_name(self, old: str, index: int) -> str:
        r = self.rng(old)
        return f"{r.choice(self.words(vocab.OPAQUE_PREFIXES))}_{r.getrandbits(16):04x}"


@register
class IdentityErasure(Perturbation):
    name: ClassVar[str] = "identity_erasure"
    tier = "perception"
    shift = "action"
    summary = "tool names become opaque identifiers; only descriptions tell what a tool does"
    expected = "choose tools from their descriptions"
    layer = "erasure"

    wrapper = _Opaque


class _Trap(_Renamer):
    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = _names(specs)
        r = self.rng()
        if self.spec.severity == 1:
            used = [c.tool for c in self.task.plan if c.tool in names]
            first = used[0] if used else names[0]
            other = r.choice([n for n in names if n != first])
            self._mapping = {n: n for n in names} | {first: other, other: first}
        else:
            shuffled = list(names)
            while len(names) > 1 and any(a == b for a, b in zip(names, shuffled, strict=True)):
                r.shuffle(shuffled)
            self._mapping = dict(zip(names, shuffled, strict=True))
        routes = [Route(with_description(s, s["function"]["description"], name=self._mapping[n]), target=n)
                  for s, n in zip(specs, names, strict=True)]  # fmt: skip
        return routes


@register
class SemanticTrap(Perturbation):
    name: ClassVar[str] = "semantic_trap"
    tier = "perception"
    shift = "action"
    summary = "tool names swapped so that they mislead (1: one pair; 2: all); descriptions stay true"
    expected = "trust the descriptions over the names"
    max_severity = 2
    layer = "traps"

    wrapper = _Trap


# The tool set.


class _Decoys(ToolsWrapper):
    per_task = False
    renames_text = True

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        level, taken = self.spec.severity, set(_names(specs))
        routes: list[Route] = []
        for spec in specs:
            old = spec["function"]["name"]
            r = self.rng(old)
            live = old
            if level >= 3:
                taken.discard(old)
                live = unique_name(r.choice(self.words(vocab.LIVE_NAMES)).format(name=old), taken)
            decoys = [old] if level >= 3 else []
            for template in r.sample(self.words(vocab.DECOY_NAMES), {1: 1, 2: 2, 3: 1}[level]):
                decoys.append(unique_name(template.format(name=old), taken))
            real = Route(with_description(spec, spec["function"]["description"], name=live), target=old)
            fakes = [self._decoy(spec, name, live, r) for name in decoys]
            position = r.randrange(len(fakes) + 1)
            routes.extend([*fakes[:position], real, *fakes[position:]])
        return routes

    def _decoy(self, spec: ToolSpec, name: str, live: str, r) -> Route:
        text = r.choice(self.words(vocab.DECOY_DESCRIPTIONS)).format(real=live, desc=spec["function"]["description"])
        message = r.choice(self.words(vocab.DECOY_ERRORS)).format(real=live)
        return Route(with_description(spec, text, name=name), handler=lambda _w, _a: failure(name, "moved", message))


@register
class DistractorTools(Perturbation):
    name: ClassVar[str] = "distractor_tools"
    tier = "perception"
    shift = "action"
    summary = "look-alike deprecated decoys beside each tool (1: one; 2: two); 3: the old names become decoys"
    expected = "skip tools documented as deprecated and call the live one"
    mild = "below severity 3 the clean names still work, and the static agent never looks at the others"
    min_severity = 0
    max_severity = 3
    layer = "decoys"

    wrapper = _Decoys


class _SchemaNoise(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        level, routes = self.spec.severity, []
        for spec in specs:
            name = spec["function"]["name"]
            r = self.rng(name)
            props = params_of(spec)["properties"]
            order = list(props)
            r.shuffle(order)
            mapping = {}
            if level >= 2:
                for p in order:
                    if p in vocab.PARAM_SYNONYMS:
                        mapping[p] = r.choice(self.words(vocab.PARAM_SYNONYMS[p]))
            new = rename_params(spec, mapping, order)
            parameters = params_of(new)
            extra_name, extra_desc = r.choice(self.words(vocab.EXTRA_PARAMS))
            if extra_name not in parameters["properties"]:
                parameters["properties"][extra_name] = {"type": "string", "description": extra_desc}
            if level >= 3:
                for prop in parameters["properties"].values():
                    if "description" in prop and prop["description"] != extra_desc:
                        template = r.choice(self.words(vocab.PARAM_DESCRIPTION_TEMPLATES))
                        prop["description"] = template.format(desc=prop["description"])
            visible = {mapping.get(p, p): p for p in props}
            routes.append(Route(new, target=name, params=visible, drop=frozenset({extra_name}) - set(props)))
        return routes


@register
class SchemaNoise(Perturbation):
    name: ClassVar[str] = "schema_noise"
    tier = "perception"
    shift = "action"
    summary = "1: parameters reordered, an ignored optional one added; 2: + renamed; 3: + descriptions reworded"
    expected = "fill arguments by their descriptions"
    mild = "severity 1 keeps every argument name, so a call by the clean schema still works"
    min_severity = 0
    max_severity = 3
    layer = "schema"

    wrapper = _SchemaNoise


class _Rewrite(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        clean = {t.name: t.description for t in get_domain(self.task.domain).tools}
        routes = []
        for spec in specs:
            text = spec["function"]["description"]
            for tool, original in clean.items():
                if original in text and tool in vocab.DESCRIPTION_REWRITES:
                    rewrite = self.rng(tool).choice(self.words(vocab.DESCRIPTION_REWRITES[tool]))
                    text = text.replace(original, rewrite)
            routes.append(Route(with_description(spec, text), target=spec["function"]["name"]))
        return routes


@register
class DescriptionRewrite(Perturbation):
    name: ClassVar[str] = "description_rewrite"
    tier = "perception"
    shift = "action"
    summary = "tool descriptions reworded (each keeps the word that says what the tool does)"
    expected = "understand reworded documentation"
    mild = "the static agent never reads descriptions, so a rewrite alone cannot hurt it; it hurts agents that do"
    layer = "descriptions"

    wrapper = _Rewrite
