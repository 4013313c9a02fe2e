"""Tier 1, Perception, the tools: their names, the tool set, their schemas and descriptions look different;
what each tool does does not change."""

from __future__ import annotations

import re
from typing import ClassVar

from sandbox.domains import domain_of
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import (
    Route,
    ToolSpec,
    ToolsWrapper,
    failure,
    params_of,
    rename_params,
    unique_name,
    with_description,
)
from sandbox.task import Task
from sandbox.vocabulary import DomainVocabulary, Pools


def _names(specs: list[ToolSpec]) -> list[str]:
    return [s["function"]["name"] for s in specs]


# Tool names.


class _Renamer(ToolsWrapper):
    renames_text = True

    @property
    def per_task(self) -> bool:
        return False

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
    paft_family = "symbolic"
    summary = "1: camelCase or kebab-case names; 2: + a prefix; 3: + abbreviated words"
    expected = "match tools by what they do, not by the exact spelling"
    max_severity = 3
    layer = "name_noise"

    wrapper = _NameNoise


def synonyms(name: str, words: DomainVocabulary | None) -> Pools | None:
    """The pooled synonyms of a tool name: the domain's own, else word for word by ``vocab.WORD_SYNONYMS``
    (``None`` where no word of the name has one)."""
    if words is not None:
        return words.tool_synonyms.get(name)
    parts = re.split(r"([_\-]+)", name)
    if not any(p.casefold() in vocab.WORD_SYNONYMS for p in parts):
        return None
    return {pool: ("".join(vocab.WORD_SYNONYMS[p.casefold()][pool][0] if p.casefold() in vocab.WORD_SYNONYMS
                           else p for p in parts),) for pool in ("train", "eval")}  # fmt: skip


class _Synonyms(_Renamer):
    @property
    def per_task(self) -> bool:
        return self.task_tools

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        words = vocab.vocabulary(self.domain)
        self._synonyms = {n: found for n in _names(specs) if (found := synonyms(n, words)) is not None}
        self._chosen = set(self._synonyms)
        if self.spec.severity == 1:
            among = [n for n in self.universe(_names(specs)) if synonyms(n, words) is not None]
            self._chosen = self.some(list(self._synonyms), among, "renamed")
        return super().build(specs)

    def new_name(self, old: str, index: int) -> str:
        if old not in self._chosen:
            return old
        return self.rng(old).choice(self.words(self._synonyms[old]))


@register
class SemanticRenaming(Perturbation):
    name: ClassVar[str] = "semantic_renaming"
    tier = "perception"
    shift = "action"
    paft_family = "symbolic"
    summary = (
        "tools renamed with synonyms (1: about half, each tool drawn on its own, at least one; 2: all); a domain "
        "without its own synonyms gets them word "
        "for word from a table of common verbs, and a name with none of them keeps its name"
    )
    expected = "find each tool by its meaning"
    max_severity = 2
    limits = "a domain none of whose tool names has a word in the synonym table (and no synonyms of its own)"
    layer = "renaming"

    def applies_to(self, task: Task) -> bool:
        domain = domain_of(task)
        words = vocab.vocabulary(domain)
        return any(synonyms(t.name, words) is not None for t in domain.tools_for(task))

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
    paft_family = "symbolic"
    summary = "tool names become opaque identifiers; only descriptions tell what a tool does"
    expected = "choose tools from their descriptions"
    layer = "erasure"

    wrapper = _Opaque


class _Trap(_Renamer):
    per_task = True  # severity 1 swaps the plan's first tool

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = _names(specs)
        # the swaps are drawn over the task's whole tool list: a tool offered later does not redraw them
        universe = self.universe(names)
        r = self.rng()
        if self.spec.severity == 1:
            used = [c.tool for c in self.task.plan if c.tool in universe]
            first = used[0] if used else universe[0]
            other = r.choice([n for n in universe if n != first])
            self._mapping = {n: n for n in universe} | {first: other, other: first}
        else:
            shuffled = list(universe)
            while len(universe) > 1 and any(a == b for a, b in zip(universe, shuffled, strict=True)):
                r.shuffle(shuffled)
            self._mapping = dict(zip(universe, shuffled, strict=True))
        routes = [Route(with_description(s, s["function"]["description"], name=self._mapping[n]), target=n)
                  for s, n in zip(specs, names, strict=True)]  # fmt: skip
        return routes


@register
class SemanticTrap(Perturbation):
    name: ClassVar[str] = "semantic_trap"
    tier = "perception"
    shift = "action"
    paft_family = "semantic"
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
    paft_family = "semantic"
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
        level, routes, own = self.spec.severity, [], vocab.vocabulary(self.domain)
        for spec in specs:
            name = spec["function"]["name"]
            r = self.rng(name)
            props = params_of(spec)["properties"]
            order = list(props)
            r.shuffle(order)
            mapping = {}
            if level >= 2:
                for p in order:
                    if own is not None and p in own.param_synonyms:
                        mapping[p] = r.choice(self.words(own.param_synonyms[p]))
                    elif own is None:
                        mapping[p] = r.choice(self.words(vocab.PARAM_FORMS)).format(param=p)
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
    paft_family = "symbolic"
    summary = (
        "1: parameters reordered, an ignored optional one added; 2: + renamed (by the domain's synonyms, else by "
        "a pattern); 3: + descriptions reworded"
    )
    expected = "fill arguments by their descriptions"
    mild = "severity 1 keeps every argument name, so a call by the clean schema still works"
    min_severity = 0
    max_severity = 3
    layer = "schema"

    wrapper = _SchemaNoise


class Rewriter(ToolsWrapper):
    @property
    def per_task(self) -> bool:
        return self.domain.tools_for(self.task) is not self.domain.tools  # the rewrites follow the task's tools

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        clean = {t.name: t.description for t in self.domain.tools_for(self.task)}
        own = vocab.vocabulary(self.domain)
        routes = []
        for spec in specs:
            text = spec["function"]["description"]
            for tool, original in clean.items():
                if original and original in text and (own is None or tool in own.description_rewrites):
                    text = text.replace(original, self.rewrite(tool, original, own))
            routes.append(Route(with_description(spec, text), target=spec["function"]["name"]))
        return routes

    def rewrite(self, tool: str, original: str, own: DomainVocabulary | None) -> str:
        r = self.rng(tool)
        if own is not None:
            return r.choice(self.words(own.description_rewrites[tool]))
        text = original
        for phrase, pools in vocab.PHRASE_SWAPS.items():
            text = re.sub(rf"\b{phrase}\b", self.words(pools)[0], text, flags=re.IGNORECASE)
        return r.choice(self.words(vocab.DESCRIPTION_FRAMES)).format(desc=text[:1].lower() + text[1:])


@register
class DescriptionRewrite(Perturbation):
    name: ClassVar[str] = "description_rewrite"
    tier = "perception"
    shift = "action"
    paft_family = "semantic"
    summary = (
        "tool descriptions reworded (each keeps the word that says what the tool does); without a domain's own "
        "rewrites, framed and with common words swapped, so most of the words stay"
    )
    expected = "understand reworded documentation"
    mild = "the static agent never reads descriptions, so a rewrite alone cannot hurt it; it hurts agents that do"
    layer = "descriptions"

    def applies_to(self, task: Task) -> bool:
        domain = domain_of(task)
        own = vocab.vocabulary(domain)
        tools = domain.tools_for(task)
        return any(t.description and (own is None or t.name in own.description_rewrites) for t in tools)

    wrapper = Rewriter
