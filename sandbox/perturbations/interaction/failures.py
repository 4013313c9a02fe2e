"""Tier 2, Interaction, calls that fail or move: transient errors (``runtime_error``), a rate limit with a wait
tool (``rate_limit``), a tool that moved (``tool_redirection``), a verification code in a new format
(``verification_code_shift``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from sandbox.domains import domain_of
from sandbox.gold_plan import gold_results
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.perturbations.wrappers import (
    CallWrapper,
    Route,
    ToolSpec,
    ToolsWrapper,
    failure,
    on,
    unique_name,
    with_description,
)
from sandbox.task import Task
from sandbox.tools import ToolResult


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
    paft_family = "error_feedback"
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
    paft_family = "error_feedback"
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
    def per_task(self) -> bool:
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
            routes.append(Route(spec, handler=_moved(name, text)))
            description = rr.choice(self.words(vocab.REDIRECT_DESCRIPTIONS)).format(name=name)
            routes.append(Route(with_description(spec, description, name=target), target=name))
        return routes


@register
class ToolRedirection(Perturbation):
    name: ClassVar[str] = "tool_redirection"
    tier = "interaction"
    shift = "observation"
    paft_family = "error_feedback"
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
    paft_family = "error_feedback"
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
        result = gold_results(domain_of(task), task).get(task.write.id)
        content = result.content if result is not None and result.ok else None
        return isinstance(content, dict) and any(isinstance(v, str) and "-" in v for v in content.values())

    wrapper = _CodeShift


def _moved(name: str, text: str) -> Callable[[Any, Any], ToolResult]:
    """The handler of a tool that moved: every call fails, saying where it went."""
    return lambda _wrapper, _arguments: failure(name, "moved", text)
