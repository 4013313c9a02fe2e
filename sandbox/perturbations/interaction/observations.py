"""Tier 2, Interaction, what an answer holds: values go missing (``missing_values``), keys and layout change
(``format_shift``)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from sandbox.domains import domain_of
from sandbox.gold_plan import gold_results, may_write
from sandbox.perturbations import vocab
from sandbox.perturbations.base import Perturbation
from sandbox.perturbations.formats import render_lines
from sandbox.perturbations.registry import register
from sandbox.perturbations.vocab import vocabulary
from sandbox.perturbations.wrappers import (
    ObservationWrapper,
)
from sandbox.seeds import rng
from sandbox.task import Task
from sandbox.tools import ToolResult
from sandbox.vocabulary import DomainVocabulary


def _key(name: str, arguments: Any) -> str:
    return name + json.dumps(arguments, sort_keys=True, default=str)


class _Missing(ObservationWrapper):
    skip_writes = True  # blanking a booking's code would force a second booking

    def call(self, name: str, arguments: Any) -> ToolResult:
        seen = self.scratch.setdefault("seen", set())
        key = _key(name, arguments)
        if key in seen:
            return self.env.call(name, arguments)
        result = super().call(name, arguments)
        if result.ok:
            seen.add(key)
        return result

    def observation(self, name: str, content: Any) -> Any:
        return _blank(content, self.spec.severity, self.rng(name), self.words(vocab.MISSING_NOTES)[0])


def _blank(content: Any, level: int, r: Any, note: tuple[str, str]) -> Any:
    share = {1: 1 / 3, 2: 2 / 3, 3: 1.0}[level]

    def blank(value: Any) -> Any:
        if isinstance(value, list):
            return [blank(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {}
        for k, v in value.items():
            if isinstance(v, dict | list) and v and not all(isinstance(x, str) for x in v):
                out[k] = blank(v)
            elif r.random() >= share:
                out[k] = v
            elif level == 1:
                out[k] = None
        return out

    blanked = blank(content)
    if blanked == content or not isinstance(blanked, dict):
        return blanked
    return {**blanked, note[0]: note[1]}


def _gold_reads(task: Task) -> list[tuple[str, Any]]:
    """(tool, content) of each call of the gold plan that succeeds and writes nothing, on the clean tools."""
    results, writing = gold_results(domain_of(task), task), may_write(domain_of(task), task)
    # no results where no episode of the task starts (its state factory fails): it has no reads to change
    return [(c.tool, r.content) for c in task.plan if (r := results.get(c.id)) is not None and r.ok
            and c.tool not in writing]  # fmt: skip


@register
class MissingValues(Perturbation):
    name: ClassVar[str] = "missing_values"
    tier = "interaction"
    shift = "observation"
    paft_family = "error_feedback"
    summary = "a first answer lacks fields (1: a third null; 2: two thirds gone; 3: all gone); asking again gives all"
    expected = "notice what is missing and call again, never invent it"
    mild = "severity 1 and 2 often spare the fields the static agent reads"
    min_severity = 0
    max_severity = 3
    limits = "a case whose gold answers lose no field at the drawn share (or that no call answers)"
    layer = "missing_values"

    wrapper = _Missing

    def applies_to(self, task: Task) -> bool:
        """Whether a field of an answer on the gold path goes missing (the draws are the wrapper's)."""
        if self.severity == 0:
            return True
        note = vocab.MISSING_NOTES[self.pool][0]
        draw = lambda tool: rng(self.seed, self.name, self.pool, task.id, tool)
        return any(_blank(content, self.severity, draw(tool), note) != content for tool, content in _gold_reads(task))

    def extra_turns(self) -> int:
        return 2 if self.severity else 0


def _rename_keys(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {mapping.get(k, k): _rename_keys(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_keys(v, mapping) for v in value]
    return value


def _form_keys(value: Any, form: str) -> Any:
    if isinstance(value, dict):
        return {form.format(key=k): _form_keys(v, form) for k, v in value.items()}
    if isinstance(value, list):
        return [_form_keys(v, form) for v in value]
    return value


def _shift(content: Any, spec: Perturbation, own: DomainVocabulary | None) -> Any:
    if own is None:
        content = _form_keys(content, vocab.FIELD_FORMS[spec.pool][0])
    else:
        content = _rename_keys(content, {k: v[spec.pool][0] for k, v in own.field_synonyms.items()})
    if spec.severity >= 2:
        content = {vocab.ENVELOPES[spec.pool][0]: content, "status": "ok"}
    return content


class _Format(ObservationWrapper):
    def observation(self, name: str, content: Any) -> Any:
        return _shift(content, self.spec, vocabulary(self.domain))

    def observe(self, result: ToolResult) -> str:
        if self.spec.severity >= 3 and result.ok:
            return render_lines(result.content)
        return self.env.observe(result)


@register
class FormatShift(Perturbation):
    name: ClassVar[str] = "format_shift"
    tier = "interaction"
    shift = "observation"
    paft_family = "error_feedback"
    summary = (
        "1: result keys renamed (by the domain's synonyms, else all by a pattern); 2: + wrapped in an envelope; "
        "3: + plain 'path = value' lines, not JSON"
    )
    expected = "read values from an unfamiliar format"
    max_severity = 3
    limits = (
        "a case with no successful answer on the gold path, or (severity 1, a domain with synonyms) none with a "
        "renamed key"
    )
    layer = "format"

    wrapper = _Format

    def applies_to(self, task: Task) -> bool:
        """Whether an answer on the gold path reads differently (one with none of the renamed keys does not)."""
        own = vocabulary(task.domain)
        results = gold_results(domain_of(task), task).values()
        return any(r.ok and (self.severity >= 3 or _shift(r.content, self, own) != r.content) for r in results)
