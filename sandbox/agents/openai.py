"""``OpenAIAgent``: any OpenAI-compatible chat-completions server as an agent."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sandbox.agent import Message, Reply, ToolSpec, Turn

API_KEY_VARS = ("OPENAGENT_API_KEY", "OPENAI_API_KEY")
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


class RequestFailed:
    """Stands in for the reply of one episode whose request failed; the runner ends just that episode
    as ``agent_error`` instead of failing the whole batch."""

    def __init__(self, error: str) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"RequestFailed({self.error})"


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in the chat-completions wire format: arguments as JSON strings, tool results with ids."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for n, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for i, call in enumerate(m["tool_calls"]):
                fn = call.get("function", call)
                args = fn.get("arguments", {})
                call_id = call.get("id") or f"call_{n}_{i}"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            pending = [c["id"] for c in calls]
            out.append({"role": "assistant", "content": m.get("content") or None, "tool_calls": calls})
        elif role == "tool":
            call_id = m.get("tool_call_id") or (pending.pop(0) if pending else f"call_{n}")
            if call_id in pending:
                pending.remove(call_id)
            out.append({"role": "tool", "tool_call_id": call_id, "content": str(m.get("content", ""))})
        else:
            out.append({"role": role, "content": m.get("content", "")})
    return out


class OpenAIAgent:
    """Any OpenAI-compatible chat-completions server (vLLM, SGLang, TGI, ``transformers serve``).

    The API key is read from ``OPENAGENT_API_KEY`` or ``OPENAI_API_KEY`` at each request and kept
    nowhere else, so it never reaches a fingerprint, a report, a repr or a pickle.
    """

    def __init__(
        self,
        model: str,
        url: str = DEFAULT_OPENAI_URL,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 0.5,
        concurrency: int = 8,
    ) -> None:
        self.model = model
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.concurrency = concurrency

    def __repr__(self) -> str:
        return f"OpenAIAgent(model={self.model!r}, url={self.url!r})"

    def fingerprint(self) -> str:
        return f"openai:{self.model}@{self.url}:t={self.temperature}:max_tokens={self.max_tokens}"

    def act(self, turns: Sequence[Turn]) -> list[Reply | RequestFailed]:
        if len(turns) <= 1 or self.concurrency <= 1:
            return [self._reply(t) for t in turns]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(turns))) as pool:
            return list(pool.map(self._reply, turns))

    def _reply(self, turn: Turn) -> Reply | RequestFailed:
        try:
            data = self.complete(turn.messages, turn.tools)
            message = data["choices"][0]["message"]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            return RequestFailed(f"{type(exc).__name__}: {exc}")
        calls = [
            {"id": c.get("id"), "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in message.get("tool_calls") or []
        ]
        return Reply(text=message.get("content") or "", tool_calls=calls or None)

    def complete(self, messages: Sequence[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        """One chat-completions request, retried with exponential backoff on 429, 5xx and network errors."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if tools:
            body["tools"] = tools
        payload = json.dumps(body).encode()
        for attempt in range(self.retries + 1):
            headers = {"Content-Type": "application/json"}
            key = next((os.environ[v] for v in API_KEY_VARS if os.environ.get(v)), None)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                if (exc.code != 429 and exc.code < 500) or attempt == self.retries:
                    detail = exc.read()[:300].decode(errors="replace")
                    raise ValueError(f"{self.url} answered HTTP {exc.code}: {detail}") from None
                wait = _retry_after(exc.headers.get("Retry-After")) or self.backoff * 2**attempt
            except (urllib.error.URLError, TimeoutError) as exc:
                if attempt == self.retries:
                    raise OSError(f"{self.url} unreachable after {attempt + 1} tries: {exc}") from None
                wait = self.backoff * 2**attempt
            time.sleep(wait)
        raise AssertionError("unreachable")


def _retry_after(value: str | None) -> float | None:
    try:
        return min(float(value), 60.0) if value else None
    except ValueError:
        return None
