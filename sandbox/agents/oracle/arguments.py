"""Filling a tool's arguments as the tools now are, from the briefed gold call's: the planner's half that reads
parameters (matched by description, joined into one value, given through a lookup by name, or a token).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sandbox.agent import ToolSpec
from sandbox.agents.oracle.choice import ToolChoice
from sandbox.agents.oracle.observations import View, first_string, partial
from sandbox.agents.oracle.steps import Blocked, Step
from sandbox.agents.oracle.tools import (
    Hidden,
    SchemaText,
    empty_args,
    masked,
    match_param,
    undocumented_id,
    unform_param,
)
from sandbox.gold_plan import carries, leaf_paths
from sandbox.task import Call, Task
from sandbox.vocabulary import DomainVocabulary

_SLOT = re.compile(r"'day(.)hh:mm'")
_PAIR = re.compile(r"'([A-Z][A-Z0-9_]*)([^A-Z0-9_\s])([A-Z][A-Z0-9_]*)'")
"""A joined argument's documented form, 'FIRST|SECOND', on a domain without a pair of its own."""


class ArgumentFiller:
    """The planner's arguments: what a call of a tool as it now is takes, from the gold call's canonical ones."""

    view: View
    task: Task
    choice: ToolChoice
    clean: dict[str, dict[str, str]]
    words: DomainVocabulary | None
    plan: dict[str, Call]

    if TYPE_CHECKING:

        def result(self, call: Call) -> Any: ...

        def final_step(self, call: Call) -> Step: ...

        def settled(self, call: Call) -> bool: ...

    def unasked(self, value: Any) -> bool:
        """A detail of the request that the query no longer gives (an underspecified query)."""
        query = self.view.query.casefold()
        return isinstance(value, str) and value in self.task.params.values() and value.casefold() not in query

    def omitted(self, call: Call) -> set[str]:
        return {p for p, v in call.args.items() if self.unasked(v)}

    def fill(
        self,
        spec: ToolSpec,
        own: dict[str, tuple[str, Any]],
        call: Call,
        request: tuple[str, str] | None = None,
    ) -> tuple[dict[str, Any], set[str]]:
        """Arguments for ``spec`` from canonical ``own`` = {param: (description, value)}, matched by description."""
        used: set[str] = set()
        finder_used: set[str] = set()
        finder_values: dict[str, tuple[str, Any]] | None = None
        names, clean_names = tuple(self.view.tools), tuple(self.clean)
        schema_text = SchemaText(spec["function"]["parameters"], names, clean_names)

        def build(schema: dict[str, Any]) -> dict[str, Any]:
            nonlocal finder_values
            out: dict[str, Any] = {}
            required = set(schema.get("required", []))
            for vname, prop in schema.get("properties", {}).items():
                raw = str(prop.get("description", ""))
                text = raw.casefold()
                hidden = Hidden(masked(raw, names), clean_names)  # where it names a tool, renamed since
                if prop.get("type") == "object" and "properties" in prop:
                    whole = match_param(vname, text, own, used, hidden)
                    if whole is not None and isinstance(own[whole][1], dict):  # given whole (bfcl's updates)
                        used.add(whole)
                        out[vname] = own[whole][1]
                    else:
                        out[vname] = build(prop)
                    continue
                joined = self.joined(raw, text, set(own) - used)
                if joined is not None:
                    a, separator, b = joined
                    out[vname] = f"{own[a][1]}{separator}{own[b][1]}"
                    used.update((a, b))
                    continue
                match, source = match_param(vname, text, own, used, hidden), own
                only = prop.get("enum")
                if match is None and vname in required and isinstance(only, list) and len(only) == 1:
                    out[vname] = only[0]  # a parameter none of ours is, that takes one value: the one it documents
                    continue
                if match is None:
                    if finder_values is None and self._wants_finder(vname, text, hidden, own, used, schema_text, call):
                        id_param = undocumented_id(own, used, schema_text, lambda v: self.is_id(call, v))
                        assert id_param is not None  # _wants_finder found it
                        finder_values = self.finder_values(call, own[id_param][1])
                        used.add(id_param)
                    if finder_values is not None:
                        match, source = match_param(vname, text, finder_values, finder_used, hidden), finder_values
                if match is not None:
                    (used if source is own else finder_used).add(match)
                    value = source[match][1]
                    if vname not in required and self.unasked(value):
                        continue
                    out[vname] = value
                    continue
                if request is not None and any(  # the tool that gave the request, or one it was split from
                    re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", raw) for tool in self.issuers(request[0])
                ):
                    out[vname] = request[1]
                    continue
                tool = self.choice.mentioned(raw, exclude=spec["function"]["name"])
                if tool is not None and vname in required:
                    out[vname] = self.token(tool)
            return out

        return build(spec["function"]["parameters"]), used

    def issuers(self, tool: str) -> tuple[str, ...]:
        """``tool`` and the tools documented alike (split by an enum's values), each with the tool it succeeds (a
        redirect's target): the names a parameter may give for the tool that gave a request."""
        alike = (tool, *(self.choice.siblings(tool) if tool in self.choice.live else ()))
        return tuple(dict.fromkeys(n for t in alike for n in (t, self.choice.documented(t))))

    def is_id(self, call: Call, value: Any) -> bool:
        """Whether ``value`` is one that a call ``call`` comes after returned (an id it was looked up for)."""
        if isinstance(value, bool) or not isinstance(value, str | int):
            return False
        param = next((p for p, v in call.args.items() if v == value and type(v) is type(value)), "")
        results = [self.result(self.plan[d]) for d in call.after]
        if any(carries(param, value, path, leaf) for result in results for path, leaf in leaf_paths(result)):
            return True
        # not known until the calls before it are in (a call that answered nothing tells nothing more if asked)
        # (nor from one that says fields are missing: the id may be one of them)
        waiting = [self.plan[d] for d, r in zip(call.after, results, strict=True) if r is None or partial(r)]
        waiting = [c for c in waiting if not self.settled(c)]
        if waiting:
            raise Blocked(*map(self.final_step, waiting))
        return False

    def lookups(self, call: Call) -> list[str]:
        """The tools whose arguments may stand for an id ``call`` takes: the domain's lookup by name, else
        the calls it comes after in the gold plan."""
        if self.words is not None and self.words.finder:
            return [self.words.finder]
        return [self.plan[d].tool for d in call.after]

    def joined(self, raw: str, text: str, free: set[str]) -> tuple[str, str, str] | None:
        """The two arguments a parameter documents as one joined value, and the separator between them."""
        pair = self.words.compound if self.words is not None else None
        if pair is not None:
            slot = _SLOT.search(text)
            return (pair[0], slot.group(1), pair[1]) if slot and set(pair) <= free else None
        m = _PAIR.search(raw)
        if m is None:
            return None
        # the form writes the parameters' names upper-cased: 'CITYA+CITYB' joins bfcl's cityA and cityB
        names = {p.casefold(): p for p in free}
        a, b = names.get(m.group(1).casefold()), names.get(m.group(3).casefold())
        return (a, m.group(2), b) if a is not None and b is not None else None

    def _wants_finder(
        self,
        vname: str,
        text: str,
        hidden: Hidden,
        own: dict[str, tuple[str, Any]],
        used: set[str],
        schema_text: SchemaText,
        call: Call,
    ) -> bool:
        if undocumented_id(own, used, schema_text, lambda v: self.is_id(call, v)) is None:
            return False
        params = [(p, desc) for tool in self.lookups(call) for p, desc in self.clean[tool].items()]
        return any(
            (desc.casefold() in text or hidden.holds(desc)) if desc else p in (vname, *unform_param(vname))
            for p, desc in params
        )

    def finder_values(self, call: Call, entity: Any) -> dict[str, tuple[str, Any]]:
        """The arguments of the lookup that found ``entity``: the plan's lookup, or (with a domain's lookup by
        name) the name and city of an observed search's row."""
        if self.words is None or not self.words.finder:
            for dep in (self.plan[d] for d in call.after):
                if any(leaf == entity and type(leaf) is type(entity) for _, leaf in leaf_paths(self.result(dep))):
                    descs = self.clean[dep.tool]
                    return {p: (descs.get(p, ""), v) for p, v in dep.args.items()}
            raise Blocked(*(self.final_step(self.plan[d]) for d in call.after))
        finder = self.words.finder
        descs = self.clean[finder]
        plan = self.plan
        for dep in (plan[d] for d in call.after):
            if dep.tool == finder:
                result = self.view.done(dep.id)
                if result is None or result.get("id") in (None, entity):
                    return {p: (descs[p], dep.args[p]) for p in descs if p in dep.args}
        for dep in (plan[d] for d in call.after):
            rows = self.result(dep)
            rows = rows.get("results") if isinstance(rows, dict) else None
            for row in rows or []:
                if isinstance(row, dict) and row.get("id") == entity and row.get("name"):
                    return {"name": (descs["name"], row["name"]), "city": (descs["city"], dep.args.get("city"))}
        raise Blocked(*(self.final_step(plan[d]) for d in call.after))

    def token(self, tool: str) -> str:
        step = Step(f"token~{tool}", tool, empty_args(self.view.tools[tool]), lambda t: empty_args(self.view.tools[t]))
        value = first_string(self.view.done(step.id))
        if value is None:
            raise Blocked(step)
        return value
