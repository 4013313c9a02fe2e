"""The oracle: a privileged expert that knows the gold plan but acts only through the tools.

It is a reference agent (:class:`~sandbox.agent.Reference`): the runner briefs it on each
episode's task (privileged: the gold calls in canonical names and the answer fields they feed),
and it reads everything else from what any agent sees: the tool specs (it finds each tool by
what its description says, never by its name), the query, and the observations. Beyond the
briefed task it is stateless: each turn it rebuilds where it is from the messages, matching
results to steps by the ``tool_call_id`` it gave each call (``<step>.<attempt>``).

It is the proof that a perturbation keeps a task solvable: it solves every solvable perturbed
case, and refuses when the tools say the task cannot be done (a capability no description
offers, an entity that is not found, a permanent failure).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sandbox.agent import Briefed, Message, Reply, ToolSpec, Turn
from sandbox.perturbations import vocab
from sandbox.perturbations.formats import parse_lines
from sandbox.task import Call, Task

MAX_ATTEMPTS = 8
FINDER = {"poi": "find_place", "medical": "find_patient"}
_ID = re.compile(r"^[A-Z]{1,2}\d{3}$")
_SLOT = re.compile(r"'day(.)hh:mm'")
_SECONDS = re.compile(r"(\d+(?:\.\d+)?)\s*s\b")
_FIELDS = {synonym: key for key, pools in vocab.FIELD_SYNONYMS.items() for words in pools.values() for synonym in words}
_ENVELOPES = {word for words in vocab.ENVELOPES.values() for word in words}
_RETRYABLE = {"runtime_error", "rate_limited", "moved"}
_NOTES = {key for notes in vocab.MISSING_NOTES.values() for key, _ in notes} | {"status"}
_PARTIAL = {note for notes in vocab.MISSING_NOTES.values() for note in notes}


def partial(result: Any) -> bool:
    """Whether an answer says that some of its fields are missing."""
    return isinstance(result, dict) and any(result.get(key) == text for key, text in _PARTIAL)


def lookup(content: Any, path: str) -> Any:
    """``results.0.name`` → ``content["results"][0]["name"]``; ``None`` where the path breaks."""
    for part in path.split("."):
        if isinstance(content, list) and part.isdigit() and int(part) < len(content):
            content = content[int(part)]
        elif isinstance(content, dict) and part in content:
            content = content[part]
        else:
            return None
    return content


def decode(text: Any) -> Any:
    """An observation as data: JSON, or the ``path = value`` lines of a shifted format."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return parse_lines(text) or text


def normalize(content: Any) -> Any:
    """Canonical keys: envelopes unwrapped, synonyms renamed, units converted back."""
    if isinstance(content, list):
        return [normalize(v) for v in content]
    if not isinstance(content, dict):
        return content
    if len(set(content) & _ENVELOPES) == 1:
        return normalize(content[next(iter(set(content) & _ENVELOPES))])
    out = {_FIELDS.get(k, k): normalize(v) for k, v in content.items()}
    if isinstance(out.get("mi"), int | float):
        out["km"] = round(out.pop("mi") * 1.609344, 1)
    if isinstance(out.get("temp_f"), int | float):
        celsius = (out.pop("temp_f") - 32) / 1.8
        out["temp_c"] = round(celsius) if abs(celsius - round(celsius)) < 0.01 else round(celsius, 1)
    return out


def results_by_call(messages: Sequence[Message]) -> dict[str, Any]:
    """The latest result of each call id, decoded from JSON where it is JSON."""
    return {
        m["tool_call_id"]: decode(m["content"]) for m in messages if m.get("role") == "tool" and m.get("tool_call_id")
    }


def is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result and "message" in result


def refuse(reason: str) -> Reply:
    return Reply(text=f"I cannot complete this request: {reason}.")


@lru_cache(maxsize=8)
def _clean_params(domain: str) -> dict[str, dict[str, str]]:
    from sandbox.domains import get_domain

    return {
        t.name: {p: prop.get("description", "") for p, prop in t.spec["function"]["parameters"]["properties"].items()}
        for t in get_domain(domain).tools
    }


@lru_cache(maxsize=1)
def _capabilities() -> list[tuple[str, re.Pattern[str]]]:
    return [(tool, re.compile("|".join(rf"\b{re.escape(w)}" for w in words))) for tool, words in vocab.CAPABILITIES]


_RUN = re.compile(r"[\w-]+")


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
def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str] | _Names:
    if all(_RUN.fullmatch(n) for n in names):
        return _Names(names)
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


@lru_cache(maxsize=4096)
def capability(description: str, names: tuple[str, ...]) -> str | None:
    """The canonical tool a description documents (tool names mentioned in it are ignored)."""
    text = _names_pattern(names).sub(" ", description).casefold() if names else description.casefold()
    return next((tool for tool, pattern in _capabilities() if pattern.search(text)), None)


@lru_cache(maxsize=1024)
def _toolset(described: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], dict[str, str]]:
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


class Refusal(Exception):
    pass


class Blocked(Exception):
    """A step cannot be built yet; ``needs`` are the steps to (re)run first."""

    def __init__(self, *needs: Step) -> None:
        self.needs = needs


@dataclass
class Step:
    id: str
    tool: str
    args: dict[str, Any]
    remap: Callable[[str], dict[str, Any]] | None = None
    """The same arguments for another tool (a redirect target has its own schema)."""


@dataclass
class Attempt:
    tool: str
    args: Any
    result: Any = None
    normalized: Any = None
    """``result`` through :func:`normalize` when it is a success, else ``None``."""


@lru_cache(maxsize=1024)
def _observation_text(text: str) -> tuple[Any, Any]:
    """An observation decoded, and normalized when it is a success. Kept by its text: each turn
    rereads every earlier observation of the episode. Shared between turns, so callers only read them."""
    result = decode(text)
    return result, None if result is None or is_error(result) else normalize(result)


def _observation(content: Any) -> tuple[Any, Any]:
    if isinstance(content, str):
        return _observation_text(content)
    result = decode(content)
    return result, None if result is None or is_error(result) else normalize(result)


@dataclass
class View:
    """What the agent sees, read once per turn."""

    task: Task
    tools: dict[str, ToolSpec]
    query: str
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)

    @classmethod
    def read(cls, turn: Turn, task: Task) -> View:
        tools = {t["function"]["name"]: t for t in turn.tools}
        query = next((m["content"] for m in turn.messages if m.get("role") == "user"), "")
        view = cls(task, tools, query)
        pending: dict[str, Attempt] = {}
        for m in turn.messages:
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                pending[call["id"]] = attempt = Attempt(fn["name"], fn["arguments"])
                view.attempts.setdefault(call["id"].rsplit(".", 1)[0], []).append(attempt)
            if m.get("role") == "tool" and m.get("tool_call_id") in pending:
                attempt = pending[m["tool_call_id"]]
                attempt.result, attempt.normalized = _observation(m["content"])
        return view

    def last(self, step: str) -> Attempt | None:
        tries = self.attempts.get(step)
        return tries[-1] if tries else None

    def done(self, step: str) -> Any:
        """The normalized result of a step if its last attempt succeeded, else ``None``."""
        last = self.last(step)
        return None if last is None else last.normalized


class Planner:
    """Turns the gold plan into calls on the tools as they now are."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.task = view.task
        self.names = tuple(view.tools)
        live, by_capability = _toolset(tuple((n, s["function"]["description"]) for n, s in view.tools.items()))
        self.live = {n: view.tools[n] for n in live}
        self.by_capability: dict[str, str] = dict(by_capability)
        self.clean = _clean_params(self.task.domain)
        self._finished: dict[str, bool] = {}
        self._final: dict[str, Step] = {}

    def next(self) -> Reply:
        task = self.task
        if task.unsolvable == "missing_capability":
            raise Refusal("none of the available tools can do this")
        for call in task.plan:
            if call.tool not in self.by_capability:
                raise Refusal(f"no available tool can {call.tool.replace('_', ' ')}")
        ready: dict[str, Step] = {}
        for call in task.plan:
            if all(self.finished(d) for d in call.after) and not self.complete(call):
                try:
                    for step in self.steps(call):
                        ready.setdefault(step.id, step)
                except Blocked as blocked:
                    for step in blocked.needs:
                        ready.setdefault(step.id, step)
        if ready:
            return Reply(tool_calls=self.issue(list(ready.values())))
        if not task.solvable:
            raise Refusal("the tools found nothing to act on")
        return Reply(text=self.answer())

    # Progress.

    def finished(self, call_id: str) -> bool:
        if call_id not in self._finished:
            call = next(c for c in self.task.plan if c.id == call_id)
            try:
                self._finished[call_id] = self.complete(call) or not self._pending(call)
            except Blocked:
                self._finished[call_id] = False
        return self._finished[call_id]

    def complete(self, call: Call) -> bool:
        """Whether the call's result is in, whole, and holds what the answer needs (checked without rebuilding)."""
        result = self.view.done(call.id)
        if result is None or partial(result):
            return False
        if isinstance(result, dict) and isinstance(result.get("pages"), int) and result["pages"] > 1:
            pages = [self.view.done(f"{call.id}~p{n}") for n in range(2, result["pages"] + 1)]
            if not all(p is not None and _rows_complete(p) for p in pages):
                return False
        merged = self.result(call)
        return all(lookup(merged, src.path) is not None for src in self.task.sources.values() if src.call == call.id)

    def _pending(self, call: Call) -> list[Step]:
        """The steps of ``call`` still to make: empty when its result is in and complete."""
        final = self.final_step(call)
        result = self.view.done(final.id)
        if result is None or partial(result):
            return [final]
        pages = self.more_pages(final, result)
        if pages:
            return pages
        merged = self.result(call)
        for path in (src.path for src in self.task.sources.values() if src.call == call.id):
            if lookup(merged, path) is None:
                return [final]
        return []

    def steps(self, call: Call) -> list[Step]:
        return self._pending(call)

    def issue(self, steps: list[Step]) -> list[dict[str, Any]]:
        calls, wait = [], 0.0
        for step in steps:
            last = self.view.last(step.id)
            tool, n = step.tool, len(self.view.attempts.get(step.id, []))
            if last is not None and is_error(last.result):
                kind, message = last.result["error"], str(last.result.get("message", ""))
                if kind not in _RETRYABLE or n >= MAX_ATTEMPTS:
                    raise Refusal(f"{tool} failed: {message or kind}")
                if kind == "rate_limited":
                    wait = max(wait, *(float(s) for s in _SECONDS.findall(message) or ["1"]))
                    self.wait_tool = self.mentioned(message, exclude=last.tool) or getattr(self, "wait_tool", None)
                moved_to = self.mentioned(message, exclude=last.tool) if kind == "moved" else None
                tool = moved_to or last.tool
            elif last is not None:
                if n >= MAX_ATTEMPTS:
                    raise Refusal(f"{tool} never gave a complete answer")
                tool = last.tool  # ask again where the last (incomplete) answer came from
            args = step.args if tool == step.tool or step.remap is None else step.remap(tool)
            calls.append({"id": f"{step.id}.{n}", "function": {"name": tool, "arguments": args}})
        if wait and getattr(self, "wait_tool", None):
            turn = sum(1 for s in self.view.attempts if s.startswith("wait~"))
            calls.insert(
                0, {"id": f"wait~{turn}.0", "function": {"name": self.wait_tool, "arguments": {"seconds": wait}}}
            )
        return calls

    def mentioned(self, text: str, exclude: str) -> str | None:
        """The first tool named in ``text`` other than ``exclude``."""
        if not self.names:
            return None
        return next((m for m in _names_pattern(self.names).findall(text) if m != exclude), None)

    # Building calls.

    def final_step(self, call: Call) -> Step:
        """The call that gives ``call``'s result, as the tools now are; kept per turn (the view is fixed)."""
        step = self._final.get(call.id)
        if step is None:
            step = self._final[call.id] = self._final_step(call)
        return step

    def _final_step(self, call: Call) -> Step:
        name = self.by_capability[call.tool]
        spec = self.live[name]
        own = {p: (self.clean[call.tool].get(p, ""), v) for p, v in call.args.items()}
        args, used = self.fill(spec, own, call)
        missing = set(own) - used - self.omitted(call)
        if not missing:
            return Step(call.id, name, args, lambda tool: self.fill(self.view.tools[tool], own, call)[0])
        ids = [p for p in missing if isinstance(call.args[p], str) and _ID.match(call.args[p])]
        if len(ids) != len(missing) or len(ids) != 1:
            raise Refusal(f"cannot fill {', '.join(sorted(missing))} of {name}")
        # Logic inversion: this tool now runs first and hands a request to the lookup by name.
        finder = self.mentioned(spec["function"]["description"], exclude=name)
        if finder is None or finder not in self.live:
            raise Refusal(f"{name} no longer takes {ids[0]} and names no tool that does")
        request_step = Step(f"{call.id}~req", name, args, lambda tool: self.fill(self.view.tools[tool], own, call)[0])
        handle = self.view.done(request_step.id)
        if _first_string(handle) is None:
            raise Blocked(request_step)
        find_args = self.finder_values(call, call.args[ids[0]])
        request = (name, _first_string(handle))
        args, _ = self.fill(self.live[finder], find_args, call, request=request)
        return Step(call.id, finder, args, lambda tool: self.fill(self.view.tools[tool], find_args, call, request)[0])

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
        schema_text = _LazyText(spec["function"]["parameters"])

        def build(schema: dict[str, Any]) -> dict[str, Any]:
            nonlocal finder_values
            out: dict[str, Any] = {}
            required = set(schema.get("required", []))
            for vname, prop in schema.get("properties", {}).items():
                raw = str(prop.get("description", ""))
                text = raw.casefold()
                if prop.get("type") == "object" and "properties" in prop:
                    out[vname] = build(prop)
                    continue
                slot = _SLOT.search(text)
                if slot and {"day", "time"} <= set(own) - used:
                    out[vname] = f"{own['day'][1]}{slot.group(1)}{own['time'][1]}"
                    used.update(("day", "time"))
                    continue
                match, source = _match(vname, text, own, used), own
                if match is None:
                    if finder_values is None and self._wants_finder(text, own, used, schema_text):
                        id_param = _id_param(own, used, schema_text)
                        finder_values = self.finder_values(call, own[id_param][1])
                        used.add(id_param)
                    if finder_values is not None:
                        match, source = _match(vname, text, finder_values, finder_used), finder_values
                if match is not None:
                    (used if source is own else finder_used).add(match)
                    value = source[match][1]
                    if vname not in required and self.unasked(value):
                        continue
                    out[vname] = value
                    continue
                if request is not None and re.search(rf"(?<![\w-]){re.escape(request[0])}(?![\w-])", raw):
                    out[vname] = request[1]
                    continue
                tool = self.mentioned(raw, exclude=spec["function"]["name"])
                if tool is not None and vname in required:
                    out[vname] = self.token(tool)
            return out

        return build(spec["function"]["parameters"]), used

    def _wants_finder(self, text: str, own: dict[str, tuple[str, Any]], used: set[str], schema_text: _LazyText) -> bool:
        if _id_param(own, used, schema_text) is None:
            return False
        finder = self.clean[FINDER[self.task.domain]]
        return any(desc.casefold() in text for desc in finder.values())

    def finder_values(self, call: Call, entity: Any) -> dict[str, tuple[str, Any]]:
        """The name and city of the entity with id ``entity``, from the plan's lookup or an observed search."""
        finder = FINDER[self.task.domain]
        descs = self.clean[finder]
        plan = {c.id: c for c in self.task.plan}
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
        step = Step(
            f"token~{tool}", tool, _empty_args(self.view.tools[tool]), lambda t: _empty_args(self.view.tools[t])
        )
        value = _first_string(self.view.done(step.id))
        if value is None:
            raise Blocked(step)
        return value

    def more_pages(self, final: Step, result: Any) -> list[Step]:
        if not isinstance(result, dict) or not isinstance(result.get("pages"), int) or result.get("page") != 1:
            return []
        tool = self.view.last(final.id).tool
        spec = self.view.tools[tool]
        page_param = next((p for p, prop in spec["function"]["parameters"]["properties"].items()
                           if "page number" in str(prop.get("description", "")).casefold()), "page")  # fmt: skip
        base = final.remap(tool) if final.remap and tool != final.tool else final.args
        steps = [Step(f"{final.id}~p{n}", tool, {**base, page_param: n}) for n in range(2, result["pages"] + 1)]
        return [s for s in steps if self.view.done(s.id) is None or not _rows_complete(self.view.done(s.id))]

    def result(self, call: Call) -> Any:
        """The normalized result of a call, its pages merged and ranked by rating as the clean tool ranks them."""
        result = self.view.done(call.id)
        if not isinstance(result, dict) or not isinstance(result.get("pages"), int):
            return result
        rows = list(result.get("results") or [])
        for n in range(2, result["pages"] + 1):
            page = self.view.done(f"{call.id}~p{n}")
            rows += (page or {}).get("results") or []
        if not all(isinstance(r, dict) and isinstance(r.get("rating"), int | float) for r in rows):
            return {**result, "results": []}
        return {**result, "results": sorted(rows, key=lambda r: -r["rating"])}

    def answer(self) -> str:
        parts = []
        for key, src in self.task.sources.items():
            value = lookup(self.result(next(c for c in self.task.plan if c.id == src.call)), src.path)
            parts.append(f"{key}: {value}")
        return "; ".join(parts)


@lru_cache(maxsize=4096)
def _is_decoy(description: str) -> bool:
    text = description.casefold()
    return any(marker in text for marker in vocab.DECOY_MARKERS)


def _match(vname: str, text: str, own: dict[str, tuple[str, Any]], used: set[str]) -> str | None:
    hits = [p for p, (desc, _) in own.items() if p not in used and desc and desc.casefold() in text]
    if not hits:
        return None
    return vname if vname in hits else min(hits, key=lambda p: list(own).index(p))


def _id_param(own: dict[str, tuple[str, Any]], used: set[str], schema_text: _LazyText) -> str | None:
    """The id argument the tool no longer documents (the one a lookup by name now stands for)."""
    ids = [p for p, (d, v) in own.items() if p not in used and isinstance(v, str) and _ID.match(v)
           and d.casefold() not in schema_text]  # fmt: skip
    return ids[0] if len(ids) == 1 else None


class _LazyText:
    """The casefolded text of a schema, made only if a test needs it."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema, self.text = schema, None

    def __contains__(self, part: str) -> bool:
        if self.text is None:
            self.text = json.dumps(self.schema).casefold()
        return part in self.text


def _first_string(value: Any) -> str | None:
    """The value a helper tool returned (a token, a request), skipping notes about missing fields."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [v for k, v in value.items() if k not in _NOTES]
    if isinstance(value, list):
        return next((s for s in map(_first_string, value) if s is not None), None)
    return None


def _empty_args(spec: ToolSpec) -> dict[str, Any]:
    props = spec["function"]["parameters"].get("properties", {})
    return {k: {} for k, p in props.items() if p.get("type") == "object"}


def _rows_complete(result: Any) -> bool:
    if partial(result):
        return False
    rows = result.get("results") if isinstance(result, dict) else None
    return isinstance(rows, list) and all(isinstance(r, dict) and r.get("rating") is not None for r in rows)


class OracleAgent(Briefed):
    """Solves every solvable case and refuses every unsolvable one, perturbed or clean.

    A reference agent: it must be briefed on each episode's task (``sandbox.run_episodes`` does it).
    """

    name = "oracle"

    def fingerprint(self) -> str:
        return "oracle-v2"

    def act(self, turns: Sequence[Turn]) -> list[Reply]:
        return [self.reply(turn) for turn in turns]

    def reply(self, turn: Turn) -> Reply:
        try:
            return Planner(View.read(turn, self.task_for(turn.episode_id))).next()
        except Refusal as refusal:
            return refuse(str(refusal))
