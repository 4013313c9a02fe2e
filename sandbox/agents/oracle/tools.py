"""The tool set as the oracle reads it: each tool found by what its description says, never by its name.

A perturbation may rename tools, add decoys beside them, reorder and rename their parameters; what it keeps
is what a description says a tool does and the descriptions of the parameters, so these are what the oracle
matches on: the capability words of a domain's vocabulary (``DomainVocabulary.capabilities``) where it has
them, else how many of the words of the clean tool's description (and of its parameters' names and
descriptions) a visible description still holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sandbox.agent import ToolSpec
from sandbox.agents.oracle.observations import ours
from sandbox.identifiers import fold
from sandbox.perturbations import vocab
from sandbox.task import Task
from sandbox.tools import Tool

_RUN = re.compile(r"[\w-]+")


def clean_tools(domain: str, task: Task | None = None) -> tuple[Tool, ...]:
    """The clean tools of ``task`` (:meth:`~sandbox.domain.Domain.tools_for`), or of ``domain`` without one."""
    from sandbox.domains import get_domain

    found = get_domain(domain)
    return found.tools if task is None else found.tools_for(task)


def clean_params(domain: str, task: Task | None = None) -> dict[str, dict[str, str]]:
    """The description of each parameter of each clean tool (of ``task``, see :func:`clean_tools`), by tool and
    parameter name."""
    return _params(clean_tools(domain, task))


@lru_cache(maxsize=64)
def _params(tools: tuple[Tool, ...]) -> dict[str, dict[str, str]]:
    return {
        t.name: {p: prop.get("description", "") for p, prop in t.spec["function"]["parameters"]["properties"].items()}
        for t in tools
    }


@lru_cache(maxsize=1)
def _capabilities() -> list[tuple[str, re.Pattern[str]]]:
    """The built-in worlds' capability words, most specific first: each world's in its order, and the finders'
    ("its id", "patient id") after every other, as they are the vaguest."""
    ordered = [c for words in ours() for c in words.capabilities if c[0] != words.finder]
    ordered += [c for words in ours() for c in words.capabilities if c[0] == words.finder]
    return [(tool, re.compile("|".join(rf"\b{re.escape(w)}" for w in words))) for tool, words in ordered]


class _Names:
    """Tool names as whole words, found without a regex per tool set (a renaming perturbation makes a new set
    per seed, and compiling the alternation costs more than a turn). For names made of ``[\\w-]`` only, a
    match of the pattern below is exactly a maximal run of ``[\\w-]`` equal to a name, so reading the runs
    finds the same matches in the same order."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = frozenset(names)

    def findall(self, text: str) -> list[str]:
        return [run for run in _RUN.findall(text) if run in self.names]

    def sub(self, repl: str, text: str) -> str:
        return _RUN.sub(lambda m: repl if m.group() in self.names else m.group(), text)


@lru_cache(maxsize=256)
def names_pattern(names: tuple[str, ...]) -> re.Pattern[str] | _Names:
    """A matcher (``findall``, ``sub``) of ``names`` as whole words of a text."""
    if all(_RUN.fullmatch(n) for n in names):
        return _Names(names)
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


@lru_cache(maxsize=4096)
def capability(description: str, names: tuple[str, ...]) -> str | None:
    """The canonical tool a description documents (tool names mentioned in it are ignored)."""
    text = names_pattern(names).sub(" ", description).casefold() if names else description.casefold()
    return next((tool for tool, pattern in _capabilities() if pattern.search(text)), None)


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"the", "and", "for", "with", "from", "into", "that", "this", "its", "are", "was", "one", "all"})
MIN_OVERLAP = 0.5
"""The share of a clean description's words a visible one must keep to document the same tool."""


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.casefold()) if len(w) > 2 and w not in _STOP)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=4096)
def name_words(name: str) -> frozenset[str]:
    """The words of a tool name, split at separators and at camelCase humps (``fillFuelTank``: fill, fuel, tank)."""
    return frozenset(_WORD.findall(_CAMEL.sub(" ", name).casefold()))


def param_text(spec: ToolSpec) -> str:
    """The names and descriptions of a spec's parameters, nested ones included, as one text."""
    parts: list[str] = []

    def walk(schema: dict[str, Any]) -> None:
        for pname, prop in schema.get("properties", {}).items():
            parts.extend((pname, str(prop.get("description", ""))))
            if prop.get("type") == "object":
                walk(prop)

    walk(spec["function"]["parameters"])
    return " ".join(parts)


Words = tuple[tuple[str, frozenset[str], frozenset[str]], ...]
"""The words of each clean tool's description and of its parameters, by tool (:func:`clean_words`)."""


def clean_words(domain: str, task: Task | None = None) -> Words:
    """The words of each clean tool's description and of its parameters, by tool (of ``task``, see
    :func:`clean_tools`)."""
    return _words(clean_tools(domain, task))


@lru_cache(maxsize=64)
def _words(tools: tuple[Tool, ...]) -> Words:
    return tuple((t.name, content_words(t.description), content_words(param_text(t.spec))) for t in tools)


def closeness(
    description: str, params: str, names: tuple[str, ...], domain: str, name: str = "", clean: Words | None = None
) -> list[tuple[tuple[float, ...], str]]:
    """How closely a visible tool matches each clean tool of ``domain`` it may be, best first: the share of the
    clean description's words its description keeps (tool names mentioned in it ignored), at least
    :data:`MIN_OVERLAP`; then how alike the parameters' words are, then the descriptions as a whole. A clean
    tool without a description is known by its parameters' words, or by its name's words in the visible
    ``name`` (a merged or redirected tool keeps its old name in its new one), the parameters first (a swapped
    name misleads)."""
    text = names_pattern(names).sub(" ", description) if names else description
    words, pwords, nwords = content_words(text), content_words(params), name_words(name)
    out = []
    for tool, clean_text, cparams in clean_words(domain) if clean is None else clean:
        kept = len(cparams & pwords) / max(1, len(cparams))
        close = len(cparams & pwords) / max(1, len(cparams | pwords))
        named = 0.0 if clean_text else float(name_words(tool) <= nwords)
        primary = len(clean_text & words) / len(clean_text) if clean_text else max(kept, named)
        if primary >= MIN_OVERLAP:
            # last, the words of the clean name the visible one keeps: two tools documented alike (bfcl's
            # weather lookups) are told apart by their names where nothing else tells them apart
            # before the names, how alike the descriptions are as a whole: a clean description whose words all
            # recur in others (bfcl's "Get account information" after its class's preamble) keeps all of them
            # in a swapped tool's too
            alike = len(clean_text & words) / max(1, len(clean_text | words))
            tool_words = name_words(tool)
            out.append(((primary, close, alike, named, len(tool_words & nwords) / max(1, len(tool_words))), tool))
    return sorted(out, reverse=True)


def closest(
    description: str, params: str, names: tuple[str, ...], domain: str, name: str = "", clean: Words | None = None
) -> str | None:
    """The clean tool a visible one is closest to (see :func:`closeness`), if any is close enough."""
    found = closeness(description, params, names, domain, name, clean)
    return found[0][1] if found else None


@lru_cache(maxsize=1024)
def toolset(
    described: tuple[tuple[str, str], ...], domain: str = "", params: tuple[str, ...] = (), clean: Words | None = None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The tools that are not decoys, and the first of them that documents each capability, by
    (name, description) and the text of each one's parameters (:func:`param_text`): the same for every turn
    of an episode, and for every episode of a tool set. ``clean``: as for :func:`closeness`."""
    names = tuple(n for n, _ in described)
    live = tuple(n for n, d in described if not _is_decoy(d))
    texts = dict(zip(names, params, strict=False))
    words = vocab.vocabulary(domain) if domain else None
    by_description = domain and (words is None or not words.capabilities)
    by_capability: dict[str, str] = {}
    if by_description:
        # One visible tool per clean tool, the closest pairs first (a tie goes to the tool listed first): a
        # merged tool that takes its lookup's arguments must not be taken for the lookup, which is there too.
        pairs = [(score, -i, name, tool) for i, (name, d) in enumerate(described) if name in live
                 for score, tool in closeness(d, texts.get(name, ""), names, domain, name, clean)]  # fmt: skip
        taken: set[str] = set()
        for _, _, name, tool in sorted(pairs, reverse=True):
            if tool not in by_capability and name not in taken:
                by_capability[tool] = name
                taken.add(name)
        return live, by_capability
    for name, description in described:
        if name in live:
            capable = capability(description, names)
            if capable is not None:
                by_capability.setdefault(capable, name)
    return live, by_capability


@lru_cache(maxsize=256)
def twins(described: tuple[tuple[str, str], ...], params: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each live tool that another one is documented exactly like (the same description, tool names aside, and
    the same parameters): the others, in order. Where names tell nothing (erased, misleading), only trying one
    tells which of two such tools is which."""
    names = tuple(n for n, _ in described)
    texts = dict(zip(names, params, strict=False))
    groups: dict[tuple[str, str], list[str]] = {}
    for name, description in described:
        if not _is_decoy(description):
            doc = names_pattern(names).sub(" ", description), texts.get(name, "")
            groups.setdefault(doc, []).append(name)
    return {n: tuple(o for o in group if o != n) for group in groups.values() if len(group) > 1 for n in group}


@lru_cache(maxsize=4096)
def _is_decoy(description: str) -> bool:
    text = description.casefold()
    return any(marker in text for marker in vocab.DECOY_MARKERS)


def match_param(
    vname: str, text: str, own: dict[str, tuple[str, Any]], used: set[str], hidden: Hidden | None = None
) -> str | None:
    """The canonical argument of ``own`` = {param: (description, value)} whose description the parameter's
    description ``text`` contains (its own name first when several do), not yet ``used``; else, with ``hidden``,
    one whose description it contains once the tools both name are masked (see :func:`masked`)."""
    free = [p for p, (desc, _) in own.items() if p not in used and desc]
    hits = [p for p in free if own[p][0].casefold() in text]
    if not hits and hidden is not None and TOOL in hidden.text:
        hits = [p for p in free if hidden.holds(own[p][0])]
    if not hits:  # an undocumented parameter is known by its name alone, the pattern that renamed it, or its style
        name = next((n for n in (vname, *unform_param(vname)) if n in own and n not in used and not own[n][0]), None)
        if name is None:  # a release renamed it, or reworded its description: the same name in another style
            name = next((n for n in own if n not in used and fold(n) == fold(vname)), None)
        return name
    return vname if vname in hits else min(hits, key=lambda p: list(own).index(p))


TOOL = "<tool>"
"""What :func:`masked` writes where a text names a tool."""


@lru_cache(maxsize=4096)
def masked(text: str, names: tuple[str, ...]) -> str:
    """``text`` casefolded, each tool of ``names`` it names (as a word) made :data:`TOOL`: a parameter's
    description that names a tool ("a book id from search_books") reads the same once the tools are renamed,
    swapped or erased ("a book id from x_2d90")."""
    return (names_pattern(names).sub(TOOL, text) if names else text).casefold()


@dataclass(frozen=True)
class Hidden:
    """A visible text with the visible tools' names masked, matched against clean descriptions with the clean
    tools' names masked (:func:`masked`)."""

    text: str
    clean: tuple[str, ...]

    def holds(self, desc: str) -> bool:
        return bool(desc) and masked(desc, self.clean) in self.text


_PARAM_FORMS = [
    re.compile("^" + re.escape(form).replace(re.escape("{param}"), "(.+)") + "$")
    for forms in vocab.PARAM_FORMS.values()
    for form in forms
]


def unform_param(vname: str) -> list[str]:
    """The names ``vname`` may have had before ``schema_noise`` renamed it by a pattern."""
    return [m.group(1) for pattern in _PARAM_FORMS if (m := pattern.match(vname))]


def undocumented_id(
    own: dict[str, tuple[str, Any]], used: set[str], schema_text: SchemaText, is_id: Callable[[Any], bool]
) -> str | None:
    """The id argument (``is_id``: a value a call before returned) the tool no longer documents (the one a
    lookup now stands for)."""
    # An argument without a description is looked for by its name, as the schema's JSON quotes it.
    ids = [p for p, (d, v) in own.items()
           if p not in used and is_id(v) and (d or f'"{p}"') not in schema_text]  # fmt: skip
    return ids[0] if len(ids) == 1 else None


class SchemaText:
    """The casefolded text of a schema, made only if a test needs it: it holds a clean description as written,
    or with the tools both name masked (the clean tools' names ``clean``, the visible ones' ``names``)."""

    def __init__(self, schema: dict[str, Any], names: tuple[str, ...] = (), clean: tuple[str, ...] = ()) -> None:
        self.schema, self.names, self.clean = schema, names, clean
        self.text: str | None = None
        self.hidden: Hidden | None = None

    def __contains__(self, part: str) -> bool:
        if self.text is None:
            raw = json.dumps(self.schema)
            self.text = raw.casefold()
            self.hidden = Hidden(masked(raw, self.names), self.clean) if self.names else None
        return part.casefold() in self.text or (self.hidden is not None and self.hidden.holds(part))


def empty_args(spec: ToolSpec) -> dict[str, Any]:
    """The arguments of a helper tool that takes none of ours: an empty object for each object parameter, and the
    one value of a required parameter that takes one."""
    parameters = spec["function"]["parameters"]
    props, required = parameters.get("properties", {}), set(parameters.get("required", ()))
    out: dict[str, Any] = {k: {} for k, p in props.items() if p.get("type") == "object"}
    # a required parameter of one accepted value (one a release added) takes it
    out |= {k: p["enum"][0] for k, p in props.items() if k in required and len(p.get("enum") or ()) == 1}
    return out
