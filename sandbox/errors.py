"""The error family: one root, name look-ups with "did you mean", and misuse that a CLI turns into exit 2.

Library code raises these, never ``SystemExit``; ``openagent`` prints a :class:`UsageError` as
``openagent <command>: error: ...`` and exits 2, the pytest plugin turns it into ``pytest.UsageError``.
"""


class OpenAgentError(Exception):
    """The root of every error pytest-openagent raises on purpose."""


class UsageError(OpenAgentError, ValueError):
    """Misuse: a bad argument, option, file or configuration; the message says what was given and how to fix it."""
