"""Tier 2, Interaction: what tools answer changes; an agent that reads feedback recovers."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, ClassVar

from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.formats import render_lines
from sandbox.perturbations.plan import domain_of, gold_results, writes
from sandbox.perturbations.registry import register
from sandbox.perturbations.vocab import vocabulary
from sandbox.perturbations.wrappers import (
    CallWrapper,
    ObservationWrapper,
    Route,
    ToolSpec,
    ToolsWrapper,
    clone,
    failure,
    on,
    params_of,
    unique_name,
    with_description,
)
from sandbox.seeds import rng
from sandbox.task import Task
from sandbox.tools import ToolResult

PAGE_SIZE = 2


def _key(name: str, arguments: Any) -> str:
    return name + json.dumps(arguments, sort_keys=True, default=str)


class _Missing(ObservationWrapper):
    skip_writes = True  # blanking a booking's code would force a second booking

    def call(self, name: str, arguments: Any) -> ToolResult:
        seen = self.scratch.setdefault("seen", set())
        key = _key(name, arguments)
        if key in seen:
            return self.env.call(name, arguments)
        result = super().call(name, arguments)
        if result.ok:
            seen.add(key)
        return result

    def observation(self, name: str, content: Any) -> Any:
        return _blank(content, self.spec.severity, self.rng(name), self.words(vocab.MISSING_NOTES)[0])


def _blank(content: Any, level: int, r: Any, note: tuple[str, str]) -> Any:
    share = {1: 1 / 3, 2: 2 / 3, 3: 1.0}[level]

    def blank(value: Any) -> Any:
        if isinstance(value, list):
            return [blank(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {}
        for k, v in value.items():
            if isinstance(v, dict | list) and v and not all(isinstance(x, str) for x in v):
                out[k] = blank(v)
            elif r.random() >= share:
                out[k] = v
            elif level == 1:
                out[k] = None
        return out

    blanked = blank(content)
    if blanked == content or not isinstance(blanked, dict):
        return blanked
    return {**blanked, note[0]: note[1]}


def _gold_reads(task: Task) -> list[tuple[str, Any]]:
    """(tool, content) of each call of the gold plan that succeeds and writes nothing, on the clean tools."""
    results, writing = gold_results(task), writes(domain_of(task), task)
    return [(c.tool, results[c.id].content) for c in task.plan if results[c.id].ok and c.tool not in writing]


@register
class MissingValues(Perturbation):
    name: ClassVar[str] = "missing_values"
    tier = "interaction"
    shift = "observation"
    summary = "a first answer lacks fields (1: a third null; 2: two thirds gone; 3: all gone); asking again gives all"
    expected = "notice what is missing and call again, never invent it"
    mild = "severity 1 and 2 often spare the fields the static agent reads"
    min_severity = 0
    max_severity = 3
    limits = "a case whose gold answers lose no field at the drawn share (or that no call answers)"
    layer = "missing_values"

    wrapper = _Missing

    def applies_to(self, task: Task) -> bool:
        """Whether a field of an answer on the gold path goes missing (the draws are the wrapper's)."""
        if self.severity == 0:
            return True
        note = vocab.MISSING_NOTES[self.pool][0]
        draw = lambda tool: rng(self.seed, self.name, self.pool, task.id, tool)
        return any(_blank(content, self.severity, draw(tool), note) != content for tool, content in _gold_reads(task))

    def extra_turns(self) -> int:
        return 2 if self.severity else 0


def _rename_keys(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {mapping.get(k, k): _rename_keys(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_keys(v, mapping) for v in value]
    return value


def _form_keys(value: Any, form: str) -> Any:
    if isinstance(value, dict):
        return {form.format(key=k): _form_keys(v, form) for k, v in value.items()}
    if isinstance(value, list):
        return [_form_keys(v, form) for v in value]
    return value


def _shift(content: Any, spec: Perturbation, own: vocab.DomainVocabulary | None) -> Any:
    if own is None:
        content = _form_keys(content, vocab.FIELD_FORMS[spec.pool][0])
    else:
        content = _rename_keys(content, {k: v[spec.pool][0] for k, v in own.field_synonyms.items()})
    if spec.severity >= 2:
        content = {vocab.ENVELOPES[spec.pool][0]: content, "status": "ok"}
    return content


class _Format(ObservationWrapper):
    def observation(self, name: str, content: Any) -> Any:
        return _shift(content, self.spec, vocabulary(self.domain))

    def observe(self, result: ToolResult) -> str:
        if self.spec.severity >= 3 and result.ok:
            return render_lines(result.content)
        return self.env.observe(result)


@register
class FormatShift(Perturbation):
    name: ClassVar[str] = "format_shift"
    tier = "interaction"
    shift = "observation"
    summary = (
        "1: result keys renamed (by the domain's synonyms, else all by a pattern); 2: + wrapped in an envelope; "
        "3: + plain 'path = value' lines, not JSON"
    )
    expected = "read values from an unfamiliar format"
    max_severity = 3
    limits = (
        "a case with no successful answer on the gold path, or (severity 1, a domain with synonyms) none with a "
        "renamed key"
    )
    layer = "format"

    wrapper = _Format

    def applies_to(self, task: Task) -> bool:
        """Whether an answer on the gold path reads differently (one with none of the renamed keys does not)."""
        own = vocabulary(task.domain)
        results = gold_results(task).values()
        return any(r.ok and (self.severity >= 3 or _shift(r.content, self, own) != r.content) for r in results)


class _Transient(CallWrapper):
    def call(self, name: str, arguments: Any) -> ToolResult:
        failed = self.scratch.get("failed", 0)
        if failed < self.spec.severity and name in self._known():
            self.scratch["failed"] = failed + 1
            return failure(name, "runtime_error", self.rng(failed).choice(self.words(vocab.RUNTIME_ERRORS)))
        return self.env.call(name, arguments)

    _names: set[str] | None = None

    def _known(self) -> set[str]:
        if self._names is None:
            self._names = {s["function"]["name"] for s in self.env.tool_specs()}
        return self._names


@register
class RuntimeFailure(Perturbation):
    name: ClassVar[str] = "runtime_error"
    tier = "interaction"
    shift = "observation"
    summary = "the first calls fail with a transient error (severity = failures before success)"
    expected = "retry the same call"
    max_severity = 3
    layer = "transient"

    needs_calls = True

    wrapper = _Transient

    def extra_turns(self) -> int:
        return self.severity


class _RateLimit(ToolsWrapper):
    per_task = False

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        taken = {s["function"]["name"] for s in specs}
        name, description = self.words(vocab.WAIT_TOOLS)[0]
        self.wait_name = unique_name(name, taken)
        wait = {"type": "function", "function": {"name": self.wait_name, "description": description, "parameters": {
            "type": "object", "properties": {"seconds": {"type": "number", "description": "seconds to wait"}},
            "required": ["seconds"]}}}  # fmt: skip
        routes = [Route(s, handler=on(self._limited, s["function"]["name"])) for s in specs]
        return [*routes, Route(wait, handler=on(self._wait))]

    @property
    def retry_after(self) -> int:
        return 2 * self.spec.severity

    def _limited(self, arguments: Any, name: str) -> ToolResult:
        s = self.scratch
        if not s.get("limited") and s.get("triggers", 0) < self.spec.severity and s.get("since", 2) >= 2:
            s.update(limited=True, triggers=s.get("triggers", 0) + 1, since=0)
        if s.get("limited"):
            text = self.words(vocab.RATE_LIMIT_ERRORS)[0].format(n=self.retry_after, wait=self.wait_name)
            return failure(name, "rate_limited", text)
        s["since"] = s.get("since", 0) + 1
        return self.env.call(name, arguments)

    def _wait(self, arguments: Any) -> ToolResult:
        seconds = arguments.get("seconds") if isinstance(arguments, dict) else None
        if not isinstance(seconds, int | float) or isinstance(seconds, bool):
            return failure(self.wait_name, "invalid_arguments", "missing argument 'seconds' (a number)")
        if seconds >= self.retry_after:
            self.scratch["limited"] = False
        return ToolResult(name=self.wait_name, content={"waited": seconds})


@register
class RateLimit(Perturbation):
    name: ClassVar[str] = "rate_limit"
    tier = "interaction"
    shift = "observation"
    summary = "calls are refused until the agent waits the time given (1: once; 2: twice, and longer)"
    expected = "call the wait tool for the time the error gives, then retry"
    max_severity = 2
    layer = "rate_limit"

    needs_calls = True

    wrapper = _RateLimit

    def extra_turns(self) -> int:
        return self.severity


class _Redirect(ToolsWrapper):
    @property
    def per_task(self) -> bool:  # type: ignore[override]
        return self.task_tools

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        names = [s["function"]["name"] for s in specs]
        moved = set(names) if self.spec.severity >= 2 else self.some(names, self.universe(names), "moved")
        taken, routes = set(names), []
        for spec in specs:
            name = spec["function"]["name"]
            if name not in moved:
                routes.append(Route(spec, target=name))
                continue
            rr = self.rng(name)
            target = unique_name(rr.choice(self.words(vocab.REDIRECT_NAMES)).format(name=name), taken)
            text = rr.choice(self.words(vocab.REDIRECT_ERRORS)).format(target=target)
            routes.append(Route(spec, handler=lambda _w, _a, name=name, text=text: failure(name, "moved", text)))
            description = rr.choice(self.words(vocab.REDIRECT_DESCRIPTIONS)).format(name=name)
            routes.append(Route(with_description(spec, description, name=target), target=name))
        return routes


@register
class ToolRedirection(Perturbation):
    name: ClassVar[str] = "tool_redirection"
    tier = "interaction"
    shift = "observation"
    summary = (
        "tools answer that they moved to another tool, which exists (1: about half, each tool drawn on its own, at "
        "least one; 2: all)"
    )
    expected = "follow the redirect to the named tool with the same arguments"
    max_severity = 2
    layer = "redirect"

    needs_calls = True

    wrapper = _Redirect

    def extra_turns(self) -> int:
        return 3


class _CodeShift(CallWrapper):
    def call(self, name: str, arguments: Any) -> ToolResult:
        state = self.state
        before = len(state.writes)
        result = self.env.call(name, arguments)
        if len(state.writes) == before or not result.ok or not isinstance(result.content, dict):
            return result
        key = next((k for k, v in result.content.items() if v == state.writes[-1].code), None)
        old = result.content.get(key) if key is not None else None
        if not isinstance(old, str) or "-" not in old:
            return result
        prefix, body = old.split("-", 1)
        new = self.rng(old).choice(self.words(vocab.CODE_FORMATS)).format(prefix=prefix, body=body)
        for i in range(before, len(state.writes)):
            if state.writes[i].code == old:
                state.writes[i] = dataclasses.replace(state.writes[i], code=new)
        for record in state.records.values():
            if record.get("code") == old:
                record["code"] = new
        return result.model_copy(update={"content": {**result.content, key: new}})


@register
class VerificationCodeShift(Perturbation):
    name: ClassVar[str] = "verification_code_shift"
    tier = "interaction"
    shift = "action"
    summary = "write actions return their verification code in a new format"
    expected = "quote the code exactly as returned, not in the remembered format"
    limits = (
        "a task that declares no write (`Task.write`; bfcl's tasks declare none, and their writes return no such "
        "code), or whose write returns no 'PREFIX-BODY' code"
    )
    layer = "codes"

    def applies_to(self, task: Task) -> bool:
        """Whether the task writes and its write returns a code of the shape ``PREFIX-BODY`` to reshape."""
        if task.write is None:
            return False
        result = gold_results(task).get(task.write.id)
        content = result.content if result is not None and result.ok else None
        return isinstance(content, dict) and any(isinstance(v, str) and "-" in v for v in content.values())

    wrapper = _CodeShift


UNITS: dict[str, tuple[str, float, float, str]] = {
    "km": ("mi", 1 / 1.609344, 0.0, "miles"),
    "c": ("f", 1.8, 32.0, "°F"),
    "kg": ("lb", 2.20462262, 0.0, "pounds"),
    "cm": ("in", 1 / 2.54, 0.0, "inches"),
}
"""Metric unit suffix of a result key (``width_cm``) → (the new suffix, factor, offset, in words): the rule that
changes units on a domain without unit tools of its own. Keys named otherwise, and whole numbers (a reader could
not tell 20 from 20.0 once converted back), keep their units."""
_UNIT_KEY = re.compile(r"^(.*_)(" + "|".join(UNITS) + r")$")


def unit_keys(content: Any) -> list[str]:
    """The numeric top-level keys of an answer that name a metric unit by their suffix."""
    if not isinstance(content, dict):
        return []
    return [
        k for k, v in content.items() if _UNIT_KEY.match(k) and isinstance(v, int | float) and not isinstance(v, bool)
    ]


def unit_tools(task: Task) -> dict[str, tuple[str, ...]]:
    """Tool → its unit-named keys, by the gold plan's answers."""
    out: dict[str, tuple[str, ...]] = {}
    for call in task.plan:
        result = gold_results(task).get(call.id)
        if result is not None and result.ok and unit_keys(result.content):
            out.setdefault(call.tool, tuple(unit_keys(result.content)))
    return out


def row_lists(task: Task) -> dict[str, str]:
    """Tool → the key of the list of rows its gold answer holds (what a paginated search pages), by the plan."""
    out: dict[str, str] = {}
    for call in task.plan:
        result = gold_results(task).get(call.id)
        if result is not None and result.ok and isinstance(result.content, dict):
            keys = [k for k, v in result.content.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
            if len(keys) == 1:
                out.setdefault(call.tool, keys[0])
    return out


class _Behaviour(ToolsWrapper):
    @property
    def per_task(self) -> bool:  # type: ignore[override]
        return vocabulary(self.domain) is None

    def build(self, specs: list[ToolSpec]) -> list[Route]:
        own = vocabulary(self.domain)
        units = own.unit_tools if own is not None else tuple(unit_tools(self.task))
        if own is not None:
            pages = {name: ("results", own.rank_by is not None) for name in own.searches}
        else:
            pages = {name: (key, False) for name, key in row_lists(self.task).items()}
        routes = []
        for spec in specs:
            name = spec["function"]["name"]
            if name in units:
                if own is None:
                    changed = sorted({UNITS[_UNIT_KEY.match(k).group(2)][3] for k in unit_tools(self.task)[name]})
                    note = f"Now reports {' and '.join(changed)} (keys renamed to match)."
                elif "km" in spec["function"]["description"]:
                    note = "Now reports miles (mi), not km."
                else:
                    note = "Now reports °F (temp_f)."
                spec = with_description(spec, f"{spec['function']['description']} {note}")
                routes.append(Route(spec, handler=on(self._units, name)))
            elif name in pages and self.spec.severity >= 2:
                key, alphabetical = pages[name]
                order = "in alphabetical order" if alphabetical else "in the same order"
                spec = clone(spec)
                spec["function"]["description"] += (
                    f" Results now come {PAGE_SIZE} per page {order}; pass page for more."
                )
                params_of(spec)["properties"]["page"] = {"type": "integer", "description": "page number (default 1)"}
                routes.append(Route(spec, handler=on(self._pages, name, key, alphabetical)))
            else:
                routes.append(Route(spec, target=name))
        return routes

    def _units(self, arguments: Any, name: str) -> ToolResult:
        result = self.env.call(name, arguments)
        if not result.ok or not isinstance(result.content, dict):
            return result
        content = dict(result.content)
        if vocabulary(self.domain) is None:
            for key in unit_keys(content):
                head, unit = _UNIT_KEY.match(key).groups()
                new, factor, offset, _ = UNITS[unit]
                content[head + new] = round(content.pop(key) * factor + offset, 6)
            return result.model_copy(update={"content": content})
        if "km" in content:
            content = {"mi": round(content.pop("km") / 1.609344, 3), **content}
        if "temp_c" in content:
            content["temp_f"] = round(content.pop("temp_c") * 1.8 + 32, 1)
        return result.model_copy(update={"content": content})

    def _pages(self, arguments: Any, name: str, key: str, alphabetical: bool) -> ToolResult:
        page = 1
        if isinstance(arguments, dict) and "page" in arguments:
            arguments = dict(arguments)
            page = arguments.pop("page")
            if not isinstance(page, int) or isinstance(page, bool) or page < 1:
                return failure(name, "invalid_arguments", "'page': must be a whole number from 1")
        result = self.env.call(name, arguments)
        if not result.ok or not isinstance(result.content, dict) or key not in result.content:
            return result
        rows = result.content[key]
        if alphabetical:
            rows = sorted(rows, key=lambda row: str(row.get("name")))
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        chunk = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return result.model_copy(update={"content": {key: chunk, "page": page, "pages": pages}})


@register
class BehaviourChange(Perturbation):
    name: ClassVar[str] = "behaviour_change"
    tier = "interaction"
    shift = "observation"
    summary = (
        "1: distance in miles and temperature in °F, as documented; 2: + searches paginated, A to Z (a domain "
        "without unit tools of its own: keys ending _km, _c, _kg, _cm converted; lists of rows paginated in order)"
    )
    expected = "read the documented change: convert units, fetch every page and rank by rating"
    max_severity = 2
    limits = (
        "a task without the domain's unit tools or searches; on a domain without unit tools of its own, a plan whose "
        "answers have no key with a metric suffix (and, at severity 2, no list of rows)"
    )
    layer = "behaviour"

    def applies_to(self, task: Task) -> bool:
        tools, own = {c.tool for c in task.plan}, vocabulary(task.domain)
        if own is None:  # the plan's answers show what changes: unit-named keys, lists of rows
            return bool(unit_tools(task)) or (self.severity >= 2 and bool(row_lists(task)))
        return bool(tools & set(own.unit_tools)) or (self.severity >= 2 and bool(tools & set(own.searches)))

    wrapper = _Behaviour

    def extra_turns(self) -> int:
        return self.severity - 1
