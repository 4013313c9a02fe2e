"""Tool choice: which visible tool makes each call of the gold plan, read from what an agent sees.

A clean tool's calls go to the visible tool whose description documents it (names may be renamed, erased or
swapped); a tool that names it and takes the same arguments documents itself as its successor (a redirect's
target) and is called directly; where two tools are documented alike and the one called answers an error,
the other is tried.
"""

from __future__ import annotations

from sandbox.agents.oracle.observations import View, says_error
from sandbox.agents.oracle.tools import clean_words, names_pattern, param_text, toolset, twins
from sandbox.perturbations.vocab import vocabulary
from sandbox.task import Call


class ToolChoice:
    """The visible tool for each clean tool of the view's task, and the twins to try after an error."""

    def __init__(self, view: View) -> None:
        self.view = view
        task = view.task
        self.names = tuple(view.tools)
        described = tuple((n, s["function"]["description"]) for n, s in view.tools.items())
        words = vocabulary(task.domain)
        params = () if words is not None and words.capabilities else tuple(map(param_text, view.tools.values()))
        live, by_capability = toolset(described, task.domain, params, clean_words(task.domain, task))
        self.live = {n: view.tools[n] for n in live}
        self.by_capability: dict[str, str] = dict(by_capability)
        self.twins = twins(described, params or tuple(map(param_text, view.tools.values())))
        self._follow_successors()

    def _follow_successors(self) -> None:
        """A tool that no clean tool is, that names one that is and takes the same arguments, documents itself
        as its successor (a redirect's target): calls go there first."""
        spare = [n for n in self.live if n not in set(self.by_capability.values())]
        for tool, name in self.by_capability.items() if spare else ():
            successor = next((n for n in spare if self._succeeds(n, name)), None)
            if successor is not None:
                self.by_capability[tool] = successor

    def _succeeds(self, new: str, old: str) -> bool:
        fn, old_fn = self.live[new]["function"], self.live[old]["function"]
        same = fn["parameters"].get("properties", {}).keys() == old_fn["parameters"].get("properties", {}).keys()
        return same and old in names_pattern((old,)).findall(fn["description"])

    def mentioned(self, text: str, exclude: str) -> str | None:
        """The first tool named in ``text`` other than ``exclude``."""
        if not self.names:
            return None
        return next((m for m in names_pattern(self.names).findall(text) if m != exclude), None)

    def tool_for(self, call: Call) -> str:
        """The visible tool for ``call``: the one that documents it, or a twin documented alike where the
        ones tried answered with an error."""
        untried = self._untried(call)
        return untried[0] if untried else self.by_capability[call.tool]

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
