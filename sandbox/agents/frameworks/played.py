"""A sandbox agent's moves played through a framework's own loop: :func:`played_through`.

The framework's model is its own scripted test model (pydantic-ai's ``FunctionModel``, a LangChain
``BaseChatModel`` with ``bind_tools`` under LangGraph's prebuilt ReAct agent, an OpenAI Agents SDK ``Model``),
whose every move is the sandbox agent's reply: at each model call the framework's history and tool definitions
are turned back into chat messages and tool specs, so the agent reads what the framework shows its model (the
names, descriptions and schemas the adapter handed over, the results the tools returned). The oracle played
through a framework proves an adapter end to end; the static baseline is a brittle framework agent; and either,
against the same agent's ``act(turns)``, measures what a framework and its adapter cost an episode.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.agent import Message, Reply, ToolSpec, Turn, as_agent, brief, close
from sandbox.agents.loop import EpisodeTools, Loop, LoopAgent
from sandbox.errors import UnknownName, require_extra
from sandbox.parse import parse_reply
from sandbox.prompt import tools_changed


def spec(name: str, description: str | None, parameters: dict[str, Any] | None) -> ToolSpec:
    parameters = parameters or {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "description": description or "", "parameters": parameters}}


def call_message(text: str, calls: list[tuple[str, str, Any]]) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, n, a in calls]  # fmt: skip
    return message


class Stepper:
    """The inner sandbox agent as a model: one turn in, its reply parsed into text and calls.

    ``stepper(episode_id, messages, specs) -> (text, [(call id, name, arguments)])``. ``history`` keeps each
    episode's conversation in its framework's own form from one user turn to the next (a task of several user
    turns calls the loop once per turn), as a chat agent keeps its history.

    A model in a framework learns that the tool list changed (drift) from the tool definitions of its next
    step; the inner agent is told as the episode loop tells an ``act(turns)`` agent, by the notice
    (:func:`sandbox.prompt.tools_changed`) after the messages it had seen, kept in its history from then on.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counter = itertools.count()
        self.seen: dict[str, tuple[list[ToolSpec], list[tuple[int, Message]]]] = {}
        self.history: dict[str, Any] = {}
        """Each episode's conversation in its framework's own form, kept from one user turn to the next."""

    def __call__(self, episode_id: str, messages: list[Message], specs: list[ToolSpec]) -> tuple[str, list[Any]]:
        before, notices = self.seen.setdefault(episode_id, (specs, []))
        if specs != before:
            notices.append((len(messages), tools_changed([s["function"]["name"] for s in specs])))
            self.seen[episode_id] = (specs, notices)
        shown = list(messages)
        for at, notice in reversed(notices):
            shown.insert(at, notice)
        [reply] = self.inner.act([Turn(episode_id, shown, specs)])
        reply = Reply(text=reply) if isinstance(reply, str) else reply
        parsed = parse_reply(reply.text, reply.tool_calls)
        return parsed.text, [(c.id or f"c{next(self.counter)}", c.name, dict(c.arguments)) for c in parsed.calls]

    def forget(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            self.seen.pop(episode_id, None)
            self.history.pop(episode_id, None)


class PlayedThrough(LoopAgent):
    """``inner``'s moves played through a framework's loop (``build(step)`` makes the loop); see the module.

    A reference agent where ``inner`` is one: it is briefed on each task only to pass it on to ``inner``.
    """

    def __init__(self, inner: Any, build: Callable[[Stepper], Loop], name: str) -> None:
        self.inner = inner
        self.stepper = Stepper(inner)
        super().__init__(build(self.stepper), name=name)

    def fingerprint(self) -> str:
        from sandbox.agent import fingerprint

        return f"{super().fingerprint()}:{fingerprint(self.inner)}"

    def brief(self, episode_id: str, task: Any) -> None:
        brief(self.inner, episode_id, task)

    def close(self, episode_ids: Sequence[str]) -> None:
        super().close(episode_ids)
        close(self.inner, episode_ids)
        self.stepper.forget(episode_ids)


# -- no framework ----------------------------------------------------------------------------------------


def python(step: Stepper) -> Loop:
    """No framework: a plain loop that calls the tools one by one; what a framework adds is measured against it."""

    def run(request: str, tools: EpisodeTools) -> str:
        messages: list[Message] = [*step.history.get(tools.episode_id, []), {"role": "user", "content": request}]
        step.history[tools.episode_id] = messages
        text = ""
        for _ in range(100):  # the episode's step limit ends it first; then every call answers at once
            text, calls = step(tools.episode_id, messages, tools.specs)
            messages.append(call_message(text, calls))
            if not calls:
                break
            for i, n, a in calls:
                messages.append({"role": "tool", "name": n, "tool_call_id": i, "content": tools.call(n, a)})
        return text

    return run


# -- pydantic-ai ----------------------------------------------------------------------------------------


def pydantic_ai(step: Stepper) -> Loop:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import FunctionModel

    from sandbox.agents.frameworks import pydantic_ai_toolset

    def messages_of(history: list[Any]) -> list[Message]:
        out: list[Message] = []
        for message in history:
            if isinstance(message, ModelResponse):
                calls = [(p.tool_call_id, p.tool_name, p.args) for p in message.parts if isinstance(p, ToolCallPart)]
                text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
                out.append(call_message(text, calls))
                continue
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append({"role": "system", "content": part.content})
                elif isinstance(part, UserPromptPart):
                    out.append({"role": "user", "content": str(part.content)})
                elif isinstance(part, ToolReturnPart | RetryPromptPart):
                    out.append({"role": "tool", "name": part.tool_name or "", "tool_call_id": part.tool_call_id,
                                "content": part.model_response_str() if isinstance(part, ToolReturnPart)
                                else part.model_response()})  # fmt: skip
        return out

    def run(request: str, tools: EpisodeTools) -> str:
        def model(history: list[Any], info: Any) -> Any:
            specs = [spec(t.name, t.description, t.parameters_json_schema) for t in info.function_tools]
            text, calls = step(tools.episode_id, messages_of(history), specs)
            if not calls:
                return ModelResponse(parts=[TextPart(text)])
            return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=i) for i, n, a in calls])

        agent = Agent(FunctionModel(model), toolsets=[pydantic_ai_toolset(tools)], retries=3)
        result = agent.run_sync(request, message_history=step.history.get(tools.episode_id))
        step.history[tools.episode_id] = result.all_messages()
        return result.output

    return run


# -- LangChain / LangGraph ------------------------------------------------------------------------------


def langgraph(step: Stepper) -> Loop:
    from langchain.agents import create_agent
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import Field

    from sandbox.agents.frameworks import langchain_tools

    class ScriptedChatModel(BaseChatModel):
        """LangChain's fake-model mechanism: a ``BaseChatModel`` whose ``_generate`` is the scripted step."""

        episode_id: str = ""
        specs: list[dict[str, Any]] = Field(default_factory=list)

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.model_copy(update={"specs": [convert_to_openai_tool(t) for t in tools]})

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            text, calls = step(self.episode_id, [_chat(m) for m in messages], self.specs)
            message = AIMessage(content=text, tool_calls=[{"id": i, "name": n, "args": a} for i, n, a in calls])
            return ChatResult(generations=[ChatGeneration(message=message)])

    def _chat(message: Any) -> Message:
        if isinstance(message, SystemMessage):
            return {"role": "system", "content": message.content}
        if isinstance(message, HumanMessage):
            return {"role": "user", "content": message.content}
        if isinstance(message, ToolMessage):
            return {"role": "tool", "name": message.name or "", "tool_call_id": message.tool_call_id,
                    "content": message.content}  # fmt: skip
        return call_message(str(message.content), [(c["id"], c["name"], c["args"]) for c in message.tool_calls])

    def run(request: str, tools: EpisodeTools) -> str:
        graph = create_agent(ScriptedChatModel(episode_id=tools.episode_id), langchain_tools(tools))
        before = step.history.get(tools.episode_id, [])
        state = graph.invoke({"messages": [*before, HumanMessage(request)]}, {"recursion_limit": 50})
        step.history[tools.episode_id] = state["messages"]
        return str(state["messages"][-1].content)

    return run


# -- OpenAI Agents SDK ----------------------------------------------------------------------------------


def openai_agents(step: Stepper) -> Loop:
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from sandbox.agents.frameworks import openai_agents_tools

    def messages_of(system: str | None, items: Any) -> list[Message]:
        out: list[Message] = [{"role": "system", "content": system}] if system else []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        for item in items:
            item = item if isinstance(item, dict) else item.model_dump()
            kind = item.get("type", "message")
            if kind == "function_call":  # parallel calls are items side by side: one assistant message
                call = {"id": item["call_id"], "type": "function",
                        "function": {"name": item["name"], "arguments": item["arguments"]}}  # fmt: skip
                if out and out[-1]["role"] == "assistant" and "tool_calls" in out[-1]:
                    out[-1]["tool_calls"].append(call)
                else:
                    out.append({"role": "assistant", "content": "", "tool_calls": [call]})
            elif kind == "function_call_output":
                out.append({"role": "tool", "tool_call_id": item["call_id"], "content": str(item["output"])})
            elif item.get("role") in ("user", "system"):
                out.append({"role": item["role"], "content": str(item["content"])})
            else:
                content = item.get("content")
                text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content or [])
                out.append({"role": "assistant", "content": text})
        return out

    class ScriptedModel(Model):
        def __init__(self, episode_id: str) -> None:
            self.episode_id = episode_id

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                               output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> Any:  # fmt: skip
            specs = [spec(t.name, t.description, t.params_json_schema) for t in tools]
            text, calls = step(self.episode_id, messages_of(system_instructions, input), specs)
            if calls:
                output: list[Any] = [
                    ResponseFunctionToolCall(type="function_call", call_id=i, name=n, arguments=json.dumps(a))
                    for i, n, a in calls
                ]
            else:
                output = [ResponseOutputMessage(id="m", role="assistant", status="completed", type="message",
                          content=[ResponseOutputText(text=text, type="output_text", annotations=[])])]  # fmt: skip
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the scripted model does not stream")

    def run(request: str, tools: EpisodeTools) -> str:
        agent = Agent(name="scripted", model=ScriptedModel(tools.episode_id), tools=openai_agents_tools(tools))
        said = [*step.history.get(tools.episode_id, []), {"role": "user", "content": request}]
        result = Runner.run_sync(agent, said, max_turns=50, run_config=RunConfig(tracing_disabled=True))
        step.history[tools.episode_id] = result.to_input_list()
        return str(result.final_output)

    return run


BUILDERS: dict[str, Callable[[Stepper], Loop]] = {"python": python, "pydantic-ai": pydantic_ai, "langgraph": langgraph,
                                               "openai-agents": openai_agents}  # fmt: skip
FRAMEWORKS = tuple(BUILDERS)
MODULES = {"python": None, "pydantic-ai": "pydantic_ai", "langgraph": "langchain", "openai-agents": "agents"}
"""The module each framework's loop needs, and the extra that installs it (below)."""
EXTRAS = {"python": None, "pydantic-ai": "pydantic-ai", "langgraph": "langchain", "openai-agents": "openai-agents"}


def played_through(framework: str, agent: Any) -> PlayedThrough:
    """``agent`` (anything with ``act(turns)``: the oracle, the static baseline, a model) played through
    ``framework``'s loop and the adapter's tools; ``framework`` is one of :data:`FRAMEWORKS`."""
    if framework not in BUILDERS:
        raise UnknownName("framework", framework, FRAMEWORKS)
    if (module := MODULES[framework]) is not None:
        require_extra(str(EXTRAS[framework]), (module,), f"played_through({framework!r}, ...)")
    return PlayedThrough(as_agent(agent), BUILDERS[framework], f"{framework}:{type(agent).__name__}")


__all__ = ["FRAMEWORKS", "PlayedThrough", "played_through"]
