"""Secrets kept out of what the product prints and stores.

A server or proxy may echo a request's ``Authorization`` header in an error body, and such text reaches
failure messages, episodes, reports and JUnit XML. :func:`redact` is applied where outside text enters
them: it removes the configured API key (read from :data:`API_KEY_VARS` at each call, as the agent reads
it), ``Bearer`` credentials, and ``sk-``-style keys.
"""

from __future__ import annotations

import os
import re

API_KEY_VARS = ("OPENAGENT_API_KEY", "OPENAI_API_KEY")
"""Where the API key of an OpenAI-compatible server is read from, in this order."""
REDACTED = "[redacted]"
MIN_KEY_CHARS = 8
"""A configured key shorter than this is not searched for as such (it would blank common words); a
``Bearer`` header carrying it is still redacted."""

_TOKENS = re.compile(
    r"(?i)(?P<scheme>\bbearer\s+)[A-Za-z0-9._~+/=-]+"  # RFC 6750's token68 after the scheme
    r"|\bsk-[A-Za-z0-9_-]{12,}"  # OpenAI-style secret keys (sk-..., sk-proj-...), as other providers copy them
)


def redact(text: str) -> str:
    """``text`` without the configured API key, ``Bearer`` tokens and ``sk-...``-like keys."""
    for var in API_KEY_VARS:
        key = os.environ.get(var, "").strip()
        if len(key) >= MIN_KEY_CHARS and key in text:
            text = text.replace(key, REDACTED)
    return _TOKENS.sub(lambda m: (m.group("scheme") or "") + REDACTED, text)


__all__ = ["API_KEY_VARS", "REDACTED", "redact"]
