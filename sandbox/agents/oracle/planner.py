"""Planning: the oracle turns the briefed gold plan into calls on the tools as they now are.

Each turn it rebuilds where it is from the :class:`~sandbox.agents.oracle.observations.View` of the
conversation and plans the next calls: a step whose result is in, whole and holding what the answer
needs is done; a failed call is retried where the failure is transient, moved or rate-limited, and
refused where it is permanent; a tool that now runs in a different order (an inverted dependency, a
token step, more pages) gets the steps it needs first.
"""

from __future__ import annotations

import re
from typing import Any

from sandbox import computed as computing
from sandbox.agent import Reply
from sandbox.agents.oracle.arguments import ArgumentFiller
from sandbox.agents.oracle.choice import ToolChoice
from sandbox.agents.oracle.observations import (
    View,
    first_string,
    is_error,
    partial,
    rows_complete,
    rows_key,
    says_error,
)
from sandbox.agents.oracle.steps import Blocked, Refusal, Step
from sandbox.agents.oracle.tools import clean_params, empty_args
from sandbox.domains import domain_of
from sandbox.gold_plan import leaf_paths, may_write
from sandbox.identifiers import fold
from sandbox.perturbations.vocab import vocabulary
from sandbox.task import Call, Source

MAX_ATTEMPTS = 8
MAX_RETRIES = 3
"""How many times a call that failed with a transient error is sent again before the oracle refuses."""
_SECONDS = re.compile(r"(\d+(?:\.\d+)?)\s*s\b")
_TRANSIENT = re.compile(
    r"temporar|time-?out|timed out|no answer within|try again|retry|busy|unavailable|overload|too many requests"
    r"|rate.?limit|\blater\b|connection|\bhangs\b|\b(?:408|429|500|502|503|504)\b",
    re.IGNORECASE,
)
_FINAL = re.compile(r"permanent|for good|\bnever\b|no retry|will not|won't|cannot be retried", re.IGNORECASE)


def transient(kind: str, message: str) -> bool:
    """Whether a call that failed so may succeed if sent again: a rate limit or a moved tool, or a runtime error
    whose words say it is passing (a timeout, a 429 or 503, "try again"). A runtime error that does not (a server's
    generic "Error executing tool ...", "not found", "forbidden", "invalid") is permanent."""
    if kind in ("rate_limited", "moved"):
        return True
    return kind == "runtime_error" and bool(_TRANSIENT.search(message)) and not _FINAL.search(message)


def empty(result: Any) -> bool:
    """An answer with nothing in it: ``null``, an empty object, list or text."""
    return result is None or (isinstance(result, dict | list | str) and not result)


class Planner(ArgumentFiller):
    """Turns the gold plan into calls on the tools as they now are."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.task = view.task
        self.choice = choice = ToolChoice(view)
        self.live, self.by_capability, self.twins = choice.live, choice.by_capability, choice.twins
        self.clean = clean_params(self.task.domain, self.task)
        self.words = vocabulary(self.task.domain)
        self.rank_by = self.words.rank_by if self.words is not None else None
        self.plan = {c.id: c for c in self.task.plan}
        self.writing = may_write(domain_of(self.task), self.task, replay=False)
        self.functions = domain_of(self.task).computed(self.task)
        self._finished: dict[str, bool] = {}
        self._final: dict[str, Step] = {}

    def next(self) -> Reply:
        task = self.task
        if task.unsolvable == "missing_capability":
            raise Refusal("none of the available tools can do this")
        for call in task.plan:
            if call.tool not in self.by_capability:
                raise Refusal(f"no available tool can {call.tool.replace('_', ' ')}")
            if (
                not task.solvable
                and call.tool not in self.writing
                and self.settled(call)
                and empty(self.view.done(call.id))
            ):
                raise Refusal(f"{self.called(call)} found nothing")
        ready: dict[str, Step] = {}
        # once the last reply's calls all succeeded, a call of the same tool as the one it follows goes out in
        # the same reply (calls of a reply run in order): a long BFCL turn's run of calls (31 rm) fits its step
        # limit. The first call and a failed one go alone: a call after a failed one in its reply would run out
        # of order (cd projects fails, cd deep_folder runs from the root)
        clean = bool(self.view.latest) and not any(is_error(a.result) for a in self.view.latest)
        for call in task.plan:
            ahead = all(
                self.finished(d) or (clean and d in ready and self.plan[d].tool == call.tool) for d in call.after
            )
            if ahead and not self.complete(call):
                try:
                    for step in self._pending(call):
                        ready.setdefault(step.id, step)
                except Blocked as blocked:
                    for step in blocked.needs:
                        ready.setdefault(step.id, step)
        if ready:
            return Reply(tool_calls=self.issue(list(ready.values())))
        if not task.solvable:
            raise Refusal("the tools found nothing to act on")
        for key, src in task.sources.items():
            call = self.plan[src.call]
            if call.tool not in self.writing and self.value(key, src) is None:
                raise Refusal(f"{self.called(call)} gave no {key}")  # asked again, the same answer
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
        if result is None or partial(result) or self.choice.retry_twin(call):
            return self.wrote(call) or self.settled(call)
        if isinstance(result, dict) and isinstance(result.get("pages"), int) and result["pages"] > 1:
            pages = [self.view.done(f"{call.id}~p{n}") for n in range(2, result["pages"] + 1)]
            if not all(p is not None and rows_complete(p, self.rank_by) for p in pages):
                return False
        return self.holds(call) or self.wrote(call) or self.settled(call)

    def wrote(self, call: Call) -> bool:
        """Whether ``call`` is a write (or a tool whose role nobody knows) whose last attempt succeeded: it is
        never sent again, whatever its answer lacks (a second refund is a side effect, not a retry)."""
        if call.tool not in self.writing:
            return False
        last = self.view.last(call.id)
        return last is not None and last.answered and not is_error(last.result) and not says_error(last.normalized)

    def called(self, call: Call) -> str:
        """The tool that last answered ``call``."""
        last = self.view.last(call.id)
        return last.tool if last is not None else call.tool

    def settled(self, call: Call) -> bool:
        """Whether asking ``call`` again would tell nothing new: its tool answered, with no error and no note of
        missing fields, with nothing (:func:`empty`) or with what it answered the time before."""
        tries = self.view.attempts.get(call.id, [])
        last = tries[-1] if tries else None
        if last is None or not last.answered or is_error(last.result) or says_error(last.normalized):
            return False
        if partial(last.normalized) or last.suspect or self.choice.retry_twin(call):
            return False
        before = tries[-2] if len(tries) > 1 else None
        return empty(last.normalized) or (before is not None and before.answered and before.result == last.result)

    def _pending(self, call: Call) -> list[Step]:
        """The steps of ``call`` still to make: empty when its result is in and complete."""
        final = self.final_step(call)
        again = [] if self.wrote(call) or self.settled(call) else [final]
        result = self.view.done(final.id)
        if result is None or partial(result) or self.choice.retry_twin(call):
            return again
        pages = self.more_pages(final, result)
        if pages:
            return pages
        return [] if self.holds(call) else again

    def issue(self, steps: list[Step]) -> list[dict[str, Any]]:
        calls, wait = [], 0.0
        for step in steps:
            last = self.view.last(step.id)
            tool, n = step.tool, self.view.sent.get(step.id, 0)
            if last is not None and is_error(last.result):
                kind, message = last.result["error"], str(last.result.get("message", ""))
                # sent by a name the tool list has dropped since (drift between two calls of one move, as a loop
                # that owns its loop makes them one by one): again, by the name the list has now
                withdrawn = kind == "unknown_tool" and last.tool not in self.view.tools
                # refused, naming a tool documented alike (a split tool's part that takes the value): that one
                alike = self.alike_named(last.tool, message)
                if not (transient(kind, message) or withdrawn or alike) or n >= MAX_ATTEMPTS:
                    raise Refusal(f"{tool} failed: {message or kind}")
                tries = self.view.attempts[step.id]
                if sum(is_error(a.result) and a.result["error"] == "runtime_error" for a in tries) > MAX_RETRIES:
                    raise Refusal(f"{tool} kept failing: {message}")
                if kind == "rate_limited":
                    wait = max(wait, *(float(s) for s in _SECONDS.findall(message) or ["1"]))
                    self.wait_tool = self.choice.mentioned(message, exclude=last.tool) or getattr(
                        self, "wait_tool", None
                    )
                moved_to = self.choice.mentioned(message, exclude=last.tool) if kind == "moved" else alike
                tool = moved_to or (step.tool if withdrawn else last.tool)
            elif last is not None:
                if n >= MAX_ATTEMPTS:
                    raise Refusal(f"{tool} never gave a complete answer")
                if not (says_error(last.normalized) and step.tool in self.twins.get(last.tool, ())):
                    tool = last.tool  # ask again where the last (incomplete) answer came from
            args = step.args if tool == step.tool or step.remap is None else step.remap(tool)
            calls.append({"id": f"{step.id}.{n}", "function": {"name": tool, "arguments": args}})
        wait_tool = getattr(self, "wait_tool", None)
        if wait and wait_tool:
            turn = sum(1 for s in self.view.attempts if s.startswith("wait~"))
            props = self.view.tools.get(wait_tool, {}).get("function", {}).get("parameters", {}).get("properties")
            param = next((p for p in props or () if fold(p) == "seconds"), "seconds")  # as a release spells it
            # and the one value of a required parameter that takes one (a release added it)
            args = {**(empty_args(self.view.tools[wait_tool]) if wait_tool in self.view.tools else {}), param: wait}
            calls.insert(0, {"id": f"wait~{turn}.0", "function": {"name": wait_tool, "arguments": args}})
        return calls

    def alike_named(self, tool: str, message: str) -> str | None:
        """The tool an error of ``tool`` names (its successor, where it moved), where it is documented like ``tool``
        (a twin or a sibling)."""
        named = self.choice.mentioned(message, exclude=tool)
        if named is None or tool not in self.live:
            return None
        alike, target = {*self.twins.get(tool, ()), *self.choice.siblings(tool)}, self.choice.current(named)
        return target if named in alike or target in alike else None  # where it moved, its successor

    # Building calls.

    def final_step(self, call: Call) -> Step:
        """The call that gives ``call``'s result, as the tools now are; kept per turn (the view is fixed)."""
        step = self._final.get(call.id)
        if step is None:
            step = self._final[call.id] = self._final_step(call)
        return step

    def _final_step(self, call: Call) -> Step:
        name = self.choice.tool_for(call)
        spec = self.live[name]
        own = {p: (self.clean[call.tool].get(p, ""), v) for p, v in call.args.items()}
        args, used = self.fill(spec, own, call)
        missing = set(own) - used - self.omitted(call)
        if not missing:
            return Step(call.id, name, args, lambda tool: self.fill(self.view.tools[tool], own, call)[0])
        ids = [p for p in missing if self.is_id(call, call.args[p])]
        if len(ids) != len(missing) or len(ids) != 1:
            raise Refusal(f"cannot fill {', '.join(sorted(missing))} of {name}")
        # Logic inversion: this tool now runs first and hands a request to the lookup by name, as its description
        # says (a redirect's target: the description of the tool it succeeds)
        documented = self.choice.documented(name)
        finder = self.choice.mentioned(self.live[documented]["function"]["description"], exclude=documented)
        finder = None if finder is None else self.choice.current(finder)
        if finder is None or finder not in self.live:
            raise Refusal(f"{name} no longer takes {ids[0]} and names no tool that does")
        request_step = Step(f"{call.id}~req", name, args, lambda tool: self.fill(self.view.tools[tool], own, call)[0])
        handed = first_string(self.view.done(request_step.id))
        if handed is None:
            raise Blocked(request_step)
        find_args = self.finder_values(call, call.args[ids[0]])
        request = (name, handed)
        args, _ = self.fill(self.live[finder], find_args, call, request=request)
        return Step(call.id, finder, args, lambda tool: self.fill(self.view.tools[tool], find_args, call, request)[0])

    def more_pages(self, final: Step, result: Any) -> list[Step]:
        if not isinstance(result, dict) or not isinstance(result.get("pages"), int) or result.get("page") != 1:
            return []
        last = self.view.last(final.id)
        assert last is not None  # the result came from it
        tool = last.tool
        spec = self.view.tools[tool]
        page_param = next((p for p, prop in spec["function"]["parameters"]["properties"].items()
                           if "page number" in str(prop.get("description", "")).casefold()), "page")  # fmt: skip
        base = final.remap(tool) if final.remap and tool != final.tool else final.args
        steps = [Step(f"{final.id}~p{n}", tool, {**base, page_param: n}) for n in range(2, result["pages"] + 1)]
        return [
            s for s in steps if self.view.done(s.id) is None or not rows_complete(self.view.done(s.id), self.rank_by)
        ]

    def result(self, call: Call) -> Any:
        """The normalized result of a call, its pages merged (and ranked as the clean tool ranks them, where the
        domain says how)."""
        result = self.view.done(call.id)
        if not isinstance(result, dict) or not isinstance(result.get("pages"), int):
            return result
        key = rows_key(result) or "results"
        rows = list(result.get(key) or [])
        for n in range(2, result["pages"] + 1):
            page = self.view.done(f"{call.id}~p{n}")
            rows += (page or {}).get(key) or []
        rank = self.rank_by
        if rank is None:
            return {**result, key: rows}
        if not all(isinstance(r, dict) and isinstance(r.get(rank), int | float) for r in rows):
            return {**result, key: []}
        return {**result, key: sorted(rows, key=lambda r: -r[rank])}

    def value(self, key: str, src: Source) -> Any:
        """The answer value ``src`` names, read or computed from the results as observed; ``None`` where they do
        not hold it yet."""
        results = {c: self.result(self.plan[c]) for c in src.computed or (src.call,)}
        return computing.value(src, {c: r for c, r in results.items() if r is not None}, self.functions.get(key))

    def holds(self, call: Call) -> bool:
        """Whether the results hold every answer value read from ``call``'s; one computed from several calls is
        judged once all of them have answered."""
        for key, src in self.task.sources.items():
            calls = src.computed or (src.call,)
            if call.id not in calls or any(self.view.done(c) is None for c in calls):
                continue
            if any(c != call.id and partial(self.view.done(c)) for c in calls):
                continue  # another call's answer lacks fields: that one is asked again, not this whole one
            if self.value(key, src) is None:
                return False
        return True

    def answer(self) -> str:
        parts = []
        for key, src in self.task.sources.items():
            value = self.value(key, src)
            if value is not None:  # a write's answer that lacks it: what it has, never the write again
                parts.append(f"{key}: {computing.text(src, value)}")
        for key, gold in self.task.answer.items():
            if key not in self.task.sources:  # no source named: the value as one of the answers shows it
                value = self.observed(gold)
                if value is not None:
                    parts.append(f"{key}: {value}")
        return "; ".join(parts)

    def observed(self, gold: str) -> Any:
        """The leaf of an answer on the plan equal to ``gold`` (as text, case aside), if one is."""
        want = str(gold).casefold()
        for call in self.task.plan:
            for _, leaf in leaf_paths(self.result(call)):
                if leaf is not None and str(leaf).casefold() == want:
                    return leaf
        return None
