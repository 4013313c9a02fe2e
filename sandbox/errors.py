"""The error family: one root, misuse that a CLI turns into exit 2, and name look-ups with "did you mean".

Library code raises these, never ``SystemExit``; every misuse check raises a :class:`UsageError` (a
``ValueError``, or :class:`WrongType`, a ``TypeError`` too), ``openagent`` prints it as
``openagent <command>: error: ...`` and exits 2, the pytest plugin turns it into ``pytest.UsageError``.
"""

import difflib
import importlib.util
from collections.abc import Iterable


class OpenAgentError(Exception):
    """The root of every error pytest-openagent raises on purpose."""


class UsageError(OpenAgentError, ValueError):
    """Misuse: a bad argument, option, file or configuration; the message says what was given and how to fix it."""


class WrongType(UsageError, TypeError):
    """Misuse by a value of the wrong kind (a function where a class was expected...): a ``TypeError`` too."""


class OpenAgentWarning(UserWarning):
    """Something a run goes on with, but that weakens what it measures (a server whose writes no reset undoes, tools
    whose role nobody declared); said once, with what to declare."""


class WorldFailure(OpenAgentError):
    """The world an episode runs in failed under it (an MCP server exited, hung or lost its transport): the
    episode ends as ``world_error``, which is never cached and never counted against the agent."""


class MissingExtra(UsageError):
    """An optional part of the package used without its dependencies; the message gives the install line."""


def install_line(extra: str) -> str:
    return f"pip install 'pytest-openagent[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def require_extra(extra: str, modules: Iterable[str], what: str) -> None:
    """A :class:`MissingExtra` naming ``extra`` if one of ``modules`` (top-level names) is not installed."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(
            f"{what} needs the `{extra}` extra ({', '.join(missing)} not installed); install it: {install_line(extra)}"
        )


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
