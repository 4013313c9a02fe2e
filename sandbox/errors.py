"""The error family: one root, misuse that a CLI turns into exit 2, and name look-ups with "did you mean".

Library code raises these, never ``SystemExit``; ``openagent`` prints a :class:`UsageError` as
``openagent <command>: error: ...`` and exits 2, the pytest plugin turns it into ``pytest.UsageError``.
"""

import difflib
from collections.abc import Iterable


class OpenAgentError(Exception):
    """The root of every error pytest-openagent raises on purpose."""


class UsageError(OpenAgentError, ValueError):
    """Misuse: a bad argument, option, file or configuration; the message says what was given and how to fix it."""


def did_you_mean(kind: str, name: object, known: Iterable[str]) -> str:
    """``Unknown perturbation 'typo'. Did you mean 'typos'? Known: ...``"""
    known = list(known)
    close = difflib.get_close_matches(str(name), known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Unknown {kind} {name!r}.{hint} Known: {', '.join(known)}."


class UnknownName(UsageError, KeyError):
    """A name that is not registered (a perturbation, a domain, a task family): a ``KeyError`` for code
    that looks names up, a :class:`UsageError` for the user who typed it; the message says what exists."""

    def __init__(self, kind: str, name: object, known: Iterable[str]) -> None:
        super().__init__(did_you_mean(kind, name, known))
        self.name = name

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])
