"""Faults on the model's side: what the agent's own LLM returns, perturbed on its way back to the harness.

A model fault is a perturbation like the others (a frozen spec, registered, JSON round-trip, shrunk by
Hypothesis, an onset ``after``), but what it changes is not the tools: it is a chat completion. The env carries
it as a :class:`ModelFaultWrapper` that changes nothing of the tools and hands the episode's
:class:`ModelRoute` to the agent (:func:`sandbox.agent.route_model`); the agent's model requests then go through
the perturbing LLM proxy (``sandbox.proxy.llm``), which asks the route what to do with each request. So a model
fault reaches only agents whose model is reached over HTTP: ``openai:`` agents and a :class:`LoopAgent` whose run
takes its model's URL from ``tools.model_url``. That is why model faults are never drawn by tier (``names()``
leaves them out): a test names them.

``turn`` is the number of assistant messages in a request: the completions the conversation already holds. A
fault starts at turn ``after``. Severity 1 faults one turn (one request for an HTTP fault), 2 faults two turns
(three requests in a row: more than a client's usual two retries), 3 faults every turn from the onset on (an
outage, a model that always does it).
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any, ClassVar

from sandbox.env import Env, Wrapper
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.registry import register
from sandbox.trajectory import Episode

REFUSAL = "I'm sorry, but I can't help with that request."
FALSE_SUCCESS = "Done! I have completed your request successfully."


class ModelFault(Perturbation):
    """Base of the model faults: how many turns (or requests) each severity faults, and what one does."""

    tier: ClassVar = "interaction"
    shift: ClassVar = "action"
    layer: ClassVar = "model"
    model_fault: ClassVar[bool] = True
    drifts: ClassVar[bool | None] = True
    needs_calls: ClassVar[bool] = True
    max_severity: ClassVar[int] = 3
    needs_upstream: ClassVar[bool] = True
    """Whether the fault rewrites the upstream's completion (False: it answers in the model's place)."""

    def times(self) -> int | None:
        """How many turns this fault fires: 1, 2, or every one from the onset (``None``)."""
        return {1: 1, 2: 2}.get(self.severity)

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        """The completion the harness gets instead (a copy), or ``None`` where this one gives nothing to fault
        (a call fault on a reply without a call: the fault waits for the next turn with one)."""
        raise NotImplementedError

    def apply(self, env: Env) -> Env:
        return ModelFaultWrapper(env, self)


class HttpFault(ModelFault):
    """The model's server answers with an error status instead of a completion."""

    status: ClassVar[int] = 500
    retry_after: ClassVar[int | None] = None
    needs_upstream: ClassVar[bool] = False

    def times(self) -> int | None:
        return {1: 1, 2: 3}.get(self.severity)

    def error(self) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Status, headers and the OpenAI-style error body."""
        kind = "rate_limit_exceeded" if self.status == 429 else "server_error"
        headers = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        body = {"error": {"message": f"injected by openagent: {self.name}", "type": kind, "code": self.status}}
        return self.status, headers, body


def _message(completion: dict[str, Any]) -> dict[str, Any] | None:
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _replaced(completion: dict[str, Any], text: str | None, finish: str = "stop", **extra: Any) -> dict[str, Any]:
    """``completion`` with its first choice's message replaced by ``text`` and no tool call."""
    fresh = {"object": "chat.completion", "choices": [{"index": 0}]}
    out: dict[str, Any] = copy.deepcopy(completion) if completion else fresh
    out.setdefault("choices", [{"index": 0}])
    out["choices"][0]["message"] = {"role": "assistant", "content": text, **extra}
    out["choices"][0]["finish_reason"] = finish
    return out


def _calls(completion: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A copy of ``completion`` and its first choice's tool calls (functions with a name), or ``None``."""
    out = copy.deepcopy(completion)
    message = _message(out)
    calls = message.get("tool_calls") if message else None
    if not isinstance(calls, list) or not calls:
        return None
    if not all(isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls):
        return None
    return out, calls


def _usable(call: Any) -> bool:
    """Whether a harness can make ``call``: a named function whose arguments are a JSON object. A harness that
    drops a call it cannot parse (LangChain's ``invalid_tool_calls``) and ends its run has taken the reply's text
    as its answer, as it would a reply with no call."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not function.get("name"):
        return False
    args = function.get("arguments")
    if isinstance(args, dict) or args in (None, ""):
        return True
    try:
        return isinstance(json.loads(args), dict)
    except (TypeError, ValueError):
        return False


def _cut(text: str) -> str:
    return text[: max(1, len(text) // 2)] if text else "{"


@register
class MalformedArguments(ModelFault):
    name: ClassVar[str] = "model_malformed_arguments"
    summary: ClassVar[str] = "the model's tool call carries arguments that are not valid JSON (cut in half)"
    expected: ClassVar[str] = "the harness reports the bad call to the model and gets a good one; never a false success"

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        found = _calls(completion)
        if found is None:
            return None
        out, calls = found
        function = calls[0]["function"]
        args = function.get("arguments")
        function["arguments"] = _cut(args if isinstance(args, str) else "{}")
        return out


@register
class UnknownTool(ModelFault):
    name: ClassVar[str] = "model_unknown_tool"
    summary: ClassVar[str] = "the model calls a tool that the request does not offer (a listed name with a suffix)"
    expected: ClassVar[str] = "the harness tells the model the tool does not exist and goes on; never a false success"

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        found = _calls(completion)
        if found is None:
            return None
        out, calls = found
        name = str(calls[0]["function"].get("name") or "tool")
        while name in tools:
            name += "_v2"
        calls[0]["function"]["name"] = name
        return out


@register
class TruncatedReply(ModelFault):
    name: ClassVar[str] = "model_truncated_reply"
    summary: ClassVar[str] = "the reply stops half-way (finish_reason length): text cut, the last call's JSON cut"
    expected: ClassVar[str] = "the harness asks again or reports the cut reply; a cut answer is no success"

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        out = copy.deepcopy(completion)
        message = _message(out)
        if message is None:
            return None
        calls = message.get("tool_calls")
        content = message.get("content")
        if isinstance(calls, list) and calls and isinstance(calls[-1], dict) and isinstance(calls[-1].get("function"),
                                                                                              dict):  # fmt: skip
            args = calls[-1]["function"].get("arguments")
            calls[-1]["function"]["arguments"] = _cut(args if isinstance(args, str) else "{}")
        elif isinstance(content, str) and len(content) > 1:
            message["content"] = _cut(content)
        else:
            return None
        out["choices"][0]["finish_reason"] = "length"
        return out


class _Said(ModelFault):
    """A reply in the model's place, with no tool call."""

    text: ClassVar[str | None] = ""
    needs_upstream: ClassVar[bool] = False

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        return _replaced(completion, self.text)


@register
class EmptyReply(_Said):
    name: ClassVar[str] = "model_empty_reply"
    summary: ClassVar[str] = "the model replies with nothing: no text, no call"
    expected: ClassVar[str] = "the harness asks again or fails loudly; an empty answer is never a success"
    text: ClassVar[str | None] = ""


@register
class Refusal(_Said):
    name: ClassVar[str] = "model_refusal"
    summary: ClassVar[str] = "the model refuses a task it can do (content and the refusal field say so)"
    expected: ClassVar[str] = "the harness asks again or passes the refusal on; it never claims the task done"
    text: ClassVar[str | None] = REFUSAL

    def perturb(self, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        return _replaced(completion, REFUSAL, refusal=REFUSAL)


@register
class FalseSuccess(_Said):
    name: ClassVar[str] = "model_false_success"
    summary: ClassVar[str] = "the model says the task is done without making a single call"
    expected: ClassVar[str] = "the agent does the task all the same, or fails; a claim with no call is no success"
    text: ClassVar[str | None] = FALSE_SUCCESS


_RETRY = "the harness retries (after Retry-After where given) and goes on; an outage fails loudly, never succeeds"


@register
class RateLimited(HttpFault):
    name: ClassVar[str] = "model_rate_limited"
    summary: ClassVar[str] = "the model's server answers 429 with Retry-After: 1"
    expected: ClassVar[str] = _RETRY
    status: ClassVar[int] = 429
    retry_after: ClassVar[int | None] = 1


@register
class RateLimitedBare(HttpFault):
    name: ClassVar[str] = "model_rate_limited_bare"
    summary: ClassVar[str] = "the model's server answers 429 with no Retry-After"
    expected: ClassVar[str] = _RETRY
    status: ClassVar[int] = 429


@register
class ServerError(HttpFault):
    name: ClassVar[str] = "model_server_error"
    summary: ClassVar[str] = "the model's server answers 500 with no Retry-After"
    expected: ClassVar[str] = _RETRY


@register
class ServerErrorRetryAfter(HttpFault):
    name: ClassVar[str] = "model_server_error_retry_after"
    summary: ClassVar[str] = "the model's server answers 500 with Retry-After: 1"
    expected: ClassVar[str] = _RETRY
    retry_after: ClassVar[int | None] = 1


class ModelRoute:
    """What the proxy does with each model request of one episode, and what it did (thread-safe).

    ``decide(turn)`` is asked before the upstream: an HTTP fault due now, or the faults that may rewrite this
    turn's completion; ``rewrite`` applies the first that can; ``served`` records what the harness got.
    """

    def __init__(self, faults: tuple[ModelFault, ...]) -> None:
        self.faults = faults
        self.injected: list[dict[str, Any]] = []
        self.requests = 0
        self.last: dict[str, Any] | None = None
        self._fired = dict.fromkeys(range(len(faults)), 0)
        self._turns: dict[int, set[int]] = {i: set() for i in range(len(faults))}
        self._lock = threading.Lock()

    def _due(self, i: int, turn: int) -> bool:
        fault, limit = self.faults[i], self.faults[i].times()
        if turn < fault.after or (turn in self._turns[i] and not isinstance(fault, HttpFault)):
            return False
        return limit is None or self._fired[i] < limit

    def decide(self, turn: int) -> tuple[HttpFault | None, list[int]]:
        """An HTTP fault due at ``turn`` (counted as fired), else the indices of the faults due for the reply."""
        with self._lock:
            self.requests += 1
            for i, fault in enumerate(self.faults):
                if isinstance(fault, HttpFault) and self._due(i, turn):
                    self._fire(i, turn, f"HTTP {fault.status}")
                    return fault, []
            return None, [i for i, f in enumerate(self.faults) if not isinstance(f, HttpFault) and self._due(i, turn)]

    def needs_upstream(self, due: list[int]) -> bool:
        return not due or any(self.faults[i].needs_upstream for i in due)

    def rewrite(self, due: list[int], turn: int, completion: dict[str, Any], tools: list[str]) -> dict[str, Any] | None:
        """The completion as the first due fault that applies rewrites it (counted as fired), else ``None``."""
        for i in due:
            out = self.faults[i].perturb(completion, tools)
            if out is not None:
                with self._lock:
                    self._fire(i, turn, self.faults[i].name)
                return out
        return None

    def _fire(self, i: int, turn: int, what: str) -> None:
        self._fired[i] += 1
        self._turns[i].add(turn)
        self.injected.append({"turn": turn, "request": self.requests, "fault": self.faults[i].name, "did": what})

    def served(self, turn: int, completion: dict[str, Any] | None, faulted: bool) -> None:
        message = _message(completion) if isinstance(completion, dict) else None
        calls = message.get("tool_calls") if message else None
        usable = sum(map(_usable, calls)) if isinstance(calls, list) else 0
        with self._lock:
            self.last = {"turn": turn, "faulted": faulted, "calls": usable}

    def summary(self) -> dict[str, Any]:
        """What was injected, and whether the harness went on to ask its model again after the last fault."""
        with self._lock:
            last_fault = max((e["request"] for e in self.injected), default=self.requests)
            final = bool(self.last and self.last["faulted"] and not self.last["calls"])
            return {"injected": list(self.injected), "requests": self.requests,
                    "asked_again": self.requests > last_fault, "final_faulted": final}  # fmt: skip


FALSE_OUTCOMES = frozenset({"wrong_answer"})
"""Outcomes that, where the harness's final answer is a faulted reply, are a false success."""


class ModelFaultWrapper(Wrapper):
    """Carries one model fault: the tools are untouched; the episode's route (shared by every model fault of the
    stack, kept in the episode's state) goes to the agent, and the judged episode is read against it."""

    def __init__(self, env: Env, spec: ModelFault) -> None:
        super().__init__(env)
        self.spec = spec
        self.label = spec.label()

    def model_route(self) -> ModelRoute:
        """This episode's route, made at its first asking."""
        scratch = self.state.scratch
        if "model_route" not in scratch:
            faults = tuple(w.spec for w in self.wrappers() if isinstance(w, ModelFaultWrapper))
            scratch["model_route"] = ModelRoute(faults)
        return scratch["model_route"]

    def review(self, episode: Episode) -> Episode:
        episode = self.env.review(episode)
        if not any(isinstance(w, ModelFaultWrapper) for w in self.env.wrappers()):  # the innermost one, once
            route = self.state.scratch.get("model_route")
            if route is not None:
                summary = route.summary()
                update: dict[str, Any] = {"model_faults": summary}
                if summary["final_faulted"] and episode.ending == "answer" and episode.outcome in FALSE_OUTCOMES:
                    update["outcome"] = "hallucinated_success"  # the harness passed a faulted reply off as the answer
                episode = episode.model_copy(update=update)
        return episode
