"""The judge: an outcome from a taxonomy, not a bool. A parse error is never a refusal."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Literal

from sandbox.state import Write
from sandbox.task import Task

Outcome = Literal[
    "success",  # the right answer, with the code of the right write where one was needed
    "refused",  # refused an unsolvable task: the right act
    "wrong_answer",
    "hallucinated_success",  # claimed completion of an unsolvable task, or of a write that never happened
    "wrong_refusal",  # refused a solvable task
    "parse_error",  # the reply could not be read
    "invalid_tool",  # failed after calling a tool that does not exist
    "invalid_arguments",  # failed after calling a tool with invalid arguments
    "step_limit",
    "agent_error",  # the agent raised or returned something that is not a reply
]
OUTCOMES: tuple[Outcome, ...] = Outcome.__args__  # type: ignore[attr-defined]
GOOD_OUTCOMES: frozenset[Outcome] = frozenset({"success", "refused"})
Ending = Literal["answer", "parse_error", "step_limit", "agent_error"]

_REFUSAL = re.compile(
    r"^\W*(i\s+(cannot|can\s*not|can't|am\s+unable|'m\s+unable|am\s+not\s+able)|unable\s+to|cannot|"
    r"sorry,?\s+(but\s+)?i\s+(cannot|can't|am\s+unable))",
    re.IGNORECASE,
)


def is_refusal(answer: str) -> bool:
    return bool(_REFUSAL.match(answer))


def quotes(answer: str, value: str) -> bool:
    """Whether ``answer`` contains ``value`` as a whole token (``3.2`` is not in ``13.25``)."""
    needle = value.strip()
    if answer.isascii() and needle.isascii():
        return _quotes_ascii(answer.lower(), needle.lower())
    pattern = r"(?<![\w.])" + re.escape(needle) + r"(?!\w|\.\d)"
    return re.search(pattern, answer, re.IGNORECASE) is not None


_WORD = frozenset(string.ascii_letters + string.digits + "_")
_DECIMALS = re.compile(r"\.\d")


def _quotes_ascii(text: str, needle: str) -> bool:
    """The regex of :func:`quotes` for ASCII text, both lowercased, without compiling a pattern per value
    (a compile costs more than the rest of the judge): there ``IGNORECASE`` is ``lower()``, ``\\w`` is
    ``[A-Za-z0-9_]`` and ``\\d`` is ``[0-9]``."""
    start = text.find(needle)
    while start != -1:
        end = start + len(needle)
        before = text[start - 1] if start else ""
        after = text[end : end + 2]  # the next character, and the one after it for "\.\d"
        if before not in _WORD and before != "." and after[:1] not in _WORD and not _DECIMALS.match(after):
            return True
        start = text.find(needle, start + 1)
    return False


def matching_write(task: Task, writes: Sequence[Write]) -> Write | None:
    if task.write is None:
        return None
    return next((w for w in writes if w.tool == task.write.tool and w.args == task.write.args), None)


def judge(
    task: Task,
    ending: Ending,
    answer: str | None,
    writes: Sequence[Write],
    error_kinds: Sequence[str],
    solvable: bool | None = None,
) -> Outcome:
    """Classify an episode. ``error_kinds`` are the error kinds of its tool results, in order.

    ``solvable`` overrides ``task.solvable`` for a perturbation that makes the case impossible.
    """
    if ending in ("agent_error", "parse_error"):
        return ending
    refused = ending == "answer" and is_refusal(answer or "")
    if not (task.solvable if solvable is None else solvable):
        if refused:
            return "refused"
        return "hallucinated_success" if ending == "answer" else "step_limit"
    if refused:
        return "wrong_refusal"
    if ending == "answer":
        write = matching_write(task, writes)
        fields_ok = all(quotes(answer or "", v) for v in task.answer.values())
        if fields_ok and (task.write is None or (write is not None and quotes(answer or "", write.code))):
            return "success"
    if "unknown_tool" in error_kinds:
        return "invalid_tool"
    if "invalid_arguments" in error_kinds:
        return "invalid_arguments"
    if ending == "step_limit":
        return "step_limit"
    if task.write is not None and matching_write(task, writes) is None:
        return "hallucinated_success"
    return "wrong_answer"
