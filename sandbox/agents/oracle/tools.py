"""The tool set as the oracle reads it: each tool found by what its description says, never by its name.

A perturbation may rename tools, add decoys beside them, reorder and rename their parameters; what it keeps
is the word in a description that says what a tool does (``vocab.CAPABILITIES``) and the descriptions of the
parameters, so these are what the oracle matches on.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from sandbox.agent import ToolSpec
from sandbox.perturbations import vocab

FINDER = {"poi": "find_place", "medical": "find_patient"}
"""The lookup by name of each domain: an id a tool no longer takes is found through it."""
ENTITY_ID = re.compile(r"^[A-Z]{1,2}\d{3}$")
_RUN = re.compile(r"[\w-]+")


@lru_cache(maxsize=8)
def clean_params(domain: str) -> dict[str, dict[str, str]]:
    """The description of each parameter of each clean tool of ``domain``, by tool and parameter name."""
    from sandbox.domains import get_domain

    return {
        t.name: {p: prop.get("description", "") for p, prop in t.spec["function"]["parameters"]["properties"].items()}
        for t in get_domain(domain).tools
    }


@lru_cache(maxsize=1)
def _capabilities() -> list[tuple[str, re.Pattern[str]]]:
    return [(tool, re.compile("|".join(rf"\b{re.escape(w)}" for w in words))) for tool, words in vocab.CAPABILITIES]


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


@lru_cache(maxsize=1024)
def toolset(described: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The tools that are not decoys, and the first of them that documents each capability, by
    (name, description): the same for every turn of an episode, and for every episode of a tool set."""
    names = tuple(n for n, _ in described)
    live = tuple(n for n, d in described if not _is_decoy(d))
    by_capability: dict[str, str] = {}
    for name, description in described:
        if name in live:
            tool = capability(description, names)
            if tool is not None:
                by_capability.setdefault(tool, name)
    return live, by_capability


@lru_cache(maxsize=4096)
def _is_decoy(description: str) -> bool:
    text = description.casefold()
    return any(marker in text for marker in vocab.DECOY_MARKERS)


def match_param(vname: str, text: str, own: dict[str, tuple[str, Any]], used: set[str]) -> str | None:
    """The canonical argument of ``own`` = {param: (description, value)} whose description the parameter's
    description ``text`` contains (its own name first when several do), not yet ``used``."""
    hits = [p for p, (desc, _) in own.items() if p not in used and desc and desc.casefold() in text]
    if not hits:
        return None
    return vname if vname in hits else min(hits, key=lambda p: list(own).index(p))


def undocumented_id(own: dict[str, tuple[str, Any]], used: set[str], schema_text: SchemaText) -> str | None:
    """The id argument the tool no longer documents (the one a lookup by name now stands for)."""
    ids = [p for p, (d, v) in own.items() if p not in used and isinstance(v, str) and ENTITY_ID.match(v)
           and d.casefold() not in schema_text]  # fmt: skip
    return ids[0] if len(ids) == 1 else None


class SchemaText:
    """The casefolded text of a schema, made only if a test needs it."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema, self.text = schema, None

    def __contains__(self, part: str) -> bool:
        if self.text is None:
            self.text = json.dumps(self.schema).casefold()
        return part in self.text


def empty_args(spec: ToolSpec) -> dict[str, Any]:
    """The arguments of a helper tool that takes none of ours: an empty object for each object parameter."""
    props = spec["function"]["parameters"].get("properties", {})
    return {k: {} for k, p in props.items() if p.get("type") == "object"}
