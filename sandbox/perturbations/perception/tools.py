"""Tier 1, Perception, the tools: their names, the tool set, their schemas and descriptions look different;
what each tool does does not change."""

from __future__ import annotations

import re
from typing import ClassVar

from sandbox.domains import get_domain
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


def _names(specs: list[ToolSpec]) -> list[str]:
    return [s["function"]["name"] for s in specs]


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
