"""Tool choice: which visible tool makes each call of the gold plan, read from what an agent sees.

A clean tool's calls go to the visible tool whose description documents it (names may be renamed, erased or
swapped); a tool that names it and takes the same arguments documents itself as its successor (a redirect's
target) and is called directly; where two tools are documented alike and the one called answers an error,
the other is tried.
"""

from __future__ import annotations

import re

from sandbox.agents.oracle.observations import View, says_error, without_field_notes
from sandbox.agents.oracle.tools import (
    clean_params,
    clean_words,
    match_param,
    names_pattern,
    param_text,
    toolset,
    twins,
)
from sandbox.perturbations.vocab import vocabulary
from sandbox.task import Call

_IDENTIFIER = re.compile(r"\b\w+_\w+\b")


class ToolChoice:
    """The visible tool for each clean tool of the view's task, and the twins to try after an error."""

    def __init__(self, view: View) -> None:
        self.view = view
        task = view.task
        self.names = tuple(view.tools)
        self.clean = clean_params(task.domain, task)
        described = tuple((n, without_field_notes(s["function"]["description"])) for n, s in view.tools.items())
        words = vocabulary(task.domain)
        params = () if words is not None and words.capabilities else tuple(map(param_text, view.tools.values()))
        live, by_capability = toolset(described, task.domain, params, clean_words(task.domain, task))
        self.live = {n: view.tools[n] for n in live}
        self.by_capability: dict[str, str] = dict(by_capability)
        self.twins = twins(described, params or tuple(map(param_text, view.tools.values())))
        self.predecessors: dict[str, str] = {}
        """Each successor followed (a redirect's target) by the tool it succeeds, whose description still
        documents how both work (the successor's says only "successor of X; same arguments")."""
        self._follow_successors()

    def _follow_successors(self) -> None:
        """A tool that no clean tool is, that names another and takes the same arguments, documents itself as its
        successor (a redirect's target): calls to a tool a clean tool is go to its successor first, and any
        successor is read through the tool it succeeds (a split tool's other part that moved too)."""
        spare = [n for n in self.live if n not in set(self.by_capability.values())]
        pattern = names_pattern(self.names) if spare else None
        for new in spare:
            named = pattern.findall(self.live[new]["function"]["description"]) if pattern is not None else []
            old = next((o for o in named if o != new and o in self.live and self._succeeds(new, o)), None)
            if old is not None:
                self.predecessors[new] = old
        for tool, name in self.by_capability.items() if self.predecessors else ():
            self.by_capability[tool] = self.current(name)

    def _succeeds(self, new: str, old: str) -> bool:
        """Whether ``new`` documents itself as ``old``'s successor: the same arguments, ``old`` named, and a
        description of its own (a description that names its tool, cloned for a split's part, makes a sibling)."""
        fn, old_fn = self.live[new]["function"], self.live[old]["function"]
        same = fn["parameters"].get("properties", {}).keys() == old_fn["parameters"].get("properties", {}).keys()
        named = old in names_pattern((old,)).findall(fn["description"])
        return same and named and self._doc(new) != self._doc(old)

    def _doc(self, tool: str) -> str:
        """``tool``'s description with tool names and identifiers masked: what siblings share."""
        pattern = names_pattern(self.names)
        return _IDENTIFIER.sub(" ", pattern.sub(" ", self.live[tool]["function"]["description"]))

    def documented(self, name: str) -> str:
        """The tool whose description documents how ``name`` works: the tool it succeeds, else itself."""
        return self.predecessors.get(name, name)

    def current(self, name: str) -> str:
        """The tool that calls to ``name`` go to now: its successor where one was followed, else itself."""
        return next((new for new, old in self.predecessors.items() if old == name), name)

    def mentioned(self, text: str, exclude: str) -> str | None:
        """The first tool named in ``text`` other than ``exclude``."""
        if not self.names:
            return None
        return next((m for m in names_pattern(self.names).findall(text) if m != exclude), None)

    def tool_for(self, call: Call) -> str:
        """The visible tool for ``call``: the one that documents it, or a twin documented alike where the
        ones tried answered with an error."""
        untried = self._untried(call)
        first = (untried or [self.by_capability[call.tool]])[0]
        if self._accepts(first, call):
            return first
        # a tool split by an enum's values: the one documented alike whose schema takes the call's value
        return next((n for n in (*untried, *self.siblings(first)) if self._accepts(n, call)), first)

    def siblings(self, name: str) -> list[str]:
        """The live tools whose description is the same as ``name``'s, tool names aside (those listed, and any
        identifier of several words: a note may name a tool no longer listed); for a successor, the same as the
        description of the tool it succeeds (successors of different tools read alike once names are masked)."""
        own = self.documented(name)
        mine = self._doc(own)
        return [self.current(n) for n in self.live if n not in (name, own) and self._doc(n) == mine]

    def _accepts(self, name: str, call: Call) -> bool:
        """Whether no enum of the tool's schema leaves out the value the call gives the parameter it matches."""
        own = {p: (self.clean.get(call.tool, {}).get(p, ""), v) for p, v in call.args.items()}

        def fits(schema: dict) -> bool:
            for vname, prop in schema.get("properties", {}).items():
                if prop.get("type") == "object" and not fits(prop):
                    return False
                values = prop.get("enum")
                if not isinstance(values, list) or len(values) < 2:
                    continue
                match = match_param(vname, str(prop.get("description", "")).casefold(), own, set())
                if match is not None and isinstance(own[match][1], str) and own[match][1] not in values:
                    return False
            return True

        return fits(self.live[name]["function"]["parameters"])

    def retry_twin(self, call: Call) -> bool:
        """Whether the call's answer was an error and a twin of its tool is still to try."""
        last = self.view.last(call.id)
        if last is None or not says_error(last.normalized) or last.tool not in self._alike(call):
            return False
        return bool(self._untried(call))

    def _alike(self, call: Call) -> tuple[str, ...]:
        name = self.by_capability[call.tool]
        return (name, *self.twins.get(name, ()))

    def _untried(self, call: Call) -> list[str]:
        failed = {a.tool for a in self.view.attempts.get(call.id, []) if says_error(a.normalized)}
        return [n for n in self._alike(call) if n not in failed]
