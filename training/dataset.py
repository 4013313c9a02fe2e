"""The training data of an SFT or PAFT run: train-split tasks, a share of them perturbed, the oracle's
trajectories on them, encoded with the checkpoint's chat template into examples (:class:`~training.batches.Example`).

The oracle plays each training case through the sandbox; its conversation (``Episode.messages``)
rendered with the checkpoint's own chat template and the case's tool specs is the example, and the
template's ``{% generation %}`` block marks the tokens the loss sees (the assistant's calls, answers
and end-of-turn marker).

PAFT (perturbation-augmented fine-tuning) is SFT whose data has a share ``alpha`` of perturbed
episodes. The perturbations come from the catalogue's **train** pool only (other names, texts and
templates than the eval pool the demo tests with), in three families as in the paper:

- ``error_feedback``: what tools return changes (errors, missing values, redirections, fatal
  failures), and the target recovers, follows, or refuses;
- ``symbolic``: tool and parameter names change, and the target calls the new names;
- ``semantic``: descriptions and phrasings change, and the target reads them.

The targets are the oracle's trajectories on the perturbed cases (its adapted behaviour).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.errors import UsageError
from sandbox.perturbations import Perturbation, get, names
from sandbox.seeds import child_seed
from training.batches import Example
from training.config import PERTURBATION_FAMILIES, SFTConfig

FAMILY_OF: dict[str, str] = {name: family for name in names() if (family := get(name).paft_family)}
"""The registered perturbations by the PAFT family they declare (``Perturbation.paft_family``). Tier 3
(dependency restructuring) and domain transfer declare none, as in the paper: they stay held-out dimensions
(name them with ``perturbations`` to train on them anyway)."""


def family_of(cls: type[Perturbation]) -> str | None:
    """The PAFT family of a perturbation class, or ``None`` if it belongs to none.

    A perturbation declares it (``paft_family``, as the catalogue's do); otherwise its shift decides
    (observation: error feedback, action: symbolic, query: semantic; reasoning and domain shifts: none).
    """
    declared = getattr(cls, "paft_family", None)
    if declared is not None:
        return declared or None
    if cls.shift == "domain" or cls.tier == "reasoning":
        return None
    if cls.shift == "observation" or cls.tier == "interaction" or getattr(cls, "unsolvable", False):
        return "error_feedback"
    return {"action": "symbolic", "query": "semantic"}.get(cls.shift)


def train_perturbations(families: list[str] | None = None, names: list[str] | None = None) -> list[str]:
    """Registered perturbation names usable for PAFT: by explicit ``names``, else by ``families``."""
    from sandbox.perturbations import get
    from sandbox.perturbations import names as registered

    if names:
        for n in names:
            try:
                get(n)
            except KeyError as exc:  # the registry's message has the "did you mean"
                raise UsageError(f"--perturbations: {exc.args[0]}") from None
        return list(names)
    families = list(families or PERTURBATION_FAMILIES)
    unknown = sorted(set(families) - set(PERTURBATION_FAMILIES))
    if unknown:
        raise UsageError(f"unknown PAFT families {unknown}; expected some of {list(PERTURBATION_FAMILIES)}")
    return [n for n in registered() if family_of(get(n)) in families]


def draw_perturbation(name: str, task: Any, seed: int) -> Any | None:
    """A train-pool instance of ``name`` for ``task`` (severity drawn), or ``None`` if it does not apply."""
    from sandbox.evaluation.draw import draw_severity
    from sandbox.perturbations import get

    cls = get(name)
    spec = cls(severity=draw_severity(cls, random.Random(seed)), pool="train", seed=seed)
    return spec if spec.applies_to(task) else None


def paft_cases(tasks: list[Any], alpha: float, perturbation_names: list[str], seed: int) -> list[Any]:
    """Cases over ``tasks``: a share ``alpha`` perturbed (one train-pool perturbation each), the rest clean."""
    from sandbox.case import Case

    if not 0 <= alpha <= 1:
        raise UsageError(f"alpha must be in [0, 1], got {alpha}")
    if alpha > 0 and not perturbation_names:
        raise UsageError("PAFT needs perturbations: none of the registered ones is in the families asked for")
    r = random.Random(child_seed(seed, "paft"))
    order = list(range(len(tasks)))
    r.shuffle(order)
    n_perturbed = round(alpha * len(tasks))
    perturbed = set(order[:n_perturbed])
    cases = []
    for i, task in enumerate(tasks):
        if i not in perturbed:
            cases.append(Case(task))
            continue
        spec = None
        for attempt in range(8):  # the first perturbation drawn that changes this task
            name = r.choice(perturbation_names)
            spec = draw_perturbation(name, task, child_seed(seed, "paft", task.id, attempt))
            if spec is not None:
                break
        cases.append(Case(task, (spec,)) if spec is not None else Case(task))
    return cases


@dataclass
class Trajectory:
    """A gold conversation (``Episode.messages``: tool calls in the OpenAI/HF ``tool_calls`` form, results as
    role ``tool``) with the tool specs it was played under, and the case it came from."""

    messages: list[dict]
    tools: list[dict]
    family: str
    perturbations: tuple[str, ...]
    case: Any = None


def gold_trajectories(cases: Sequence[Any]) -> list[Trajectory]:
    """The oracle's conversation and tool specs on each case, keeping only its good episodes.

    The oracle used is the sandbox's exported ``OracleAgent`` (perturbation-aware where the
    sandbox's is): its trajectories under a perturbation are the adapted targets PAFT trains on.
    """
    from sandbox import OracleAgent, run_episodes

    envs = [c.env() for c in cases]
    budget = max((c.max_steps for c in cases), default=8)  # a perturbation (a redirect, a retry) may need more turns
    episodes = run_episodes(OracleAgent(), envs, budget)
    return [
        Trajectory(ep.messages, env.tool_specs(), case.task.family, tuple(p.name for p in case.perturbations), case)
        for case, ep, env in zip(cases, episodes, envs, strict=True)
        if ep.success
    ]


def encode(tokenizer: Any, messages: list[dict], tools: list[dict] | None) -> tuple[list[int], list[bool]]:
    """Token ids of a conversation through the chat template, and the assistant mask."""
    out = tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids = list(out["input_ids"])
    mask = [bool(m) for m in out["assistant_masks"]]
    if not any(mask):
        raise UsageError(
            "the chat template marks no assistant tokens: it needs {% generation %} ... {% endgeneration %} "
            "around the assistant's content (training.inference.chat_template has it)"
        )
    return ids, mask


def encode_all(tokenizer: Any, trajectories: Sequence[Trajectory], max_length: int) -> list[Example]:
    examples = []
    for t in trajectories:
        ids, mask = encode(tokenizer, t.messages, t.tools)
        if len(ids) <= max_length:
            examples.append(Example(ids, mask, t.perturbations, t.family))
    return examples


def build_trajectories(cfg: SFTConfig) -> tuple[list[Trajectory], dict]:
    """The gold trajectories of ``cfg`` (clean for SFT, mixed for PAFT), before any tokenizer, and a summary.

    What ``openagent train sft|paft`` trains on (through :func:`build_examples`) and what ``openagent data
    export`` writes: one function, so the two never differ.
    """
    from sandbox import tasks
    from sandbox.case import Case
    from training.rename import rename_share

    train_tasks = tasks(cfg.domain, "train", cfg.episodes, cfg.seed, cfg.task_families or None)
    if cfg.alpha > 0:
        names = train_perturbations(cfg.families, cfg.perturbations)
        cases = paft_cases(train_tasks, cfg.alpha, names, cfg.seed)
    else:
        names, cases = [], [Case(t) for t in train_tasks]
    trajectories = gold_trajectories(cases)
    renamed = rename_share(trajectories, cfg.domain, cfg.rename_cities, cfg.seed)
    used = Counter(p.name for c in cases for p in c.perturbations)
    rows: list[Trajectory] = []
    if cfg.rows:
        rows = read_rows(cfg.rows)
        trajectories += rows
        used.update(name for t in rows for name in t.perturbations)
    meta = {
        "domain": cfg.domain, "split": "train", "task_families": cfg.task_families, "tasks": len(train_tasks),
        "cases": len(cases), "trajectories": len(trajectories), "alpha": cfg.alpha, "renamed_cities": renamed,
        "pool": "train", "perturbations": dict(sorted(used.items())), "candidates": names,
        "rows": {"path": cfg.rows, "count": len(rows)} if cfg.rows else None,
    }  # fmt: skip
    return trajectories, meta


def read_rows(path: str) -> list[Trajectory]:
    """The chat rows of a JSONL file (``openagent data export`` and ``from-report`` write them) as trajectories;
    a :class:`UsageError` naming the line if one is not such a row."""
    import json
    from pathlib import Path

    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"--rows {path!r}: cannot read it ({exc.strerror}); give a JSONL file of chat rows") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            meta = row.get("meta", {})
            perturbations = tuple(p["name"] for p in meta.get("perturbations", []))
            out.append(Trajectory(row["messages"], row.get("tools") or [], meta.get("family", ""), perturbations))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise UsageError(
                f'--rows {path!r} line {number}: not a chat row ({{"messages": [...], "tools": [...], '
                f'"meta": {{...}}}}, as `openagent data from-report` writes)'
            ) from None
    return out


def build_examples(cfg: SFTConfig, tokenizer: Any) -> tuple[list, dict]:
    """Token examples for ``cfg`` (clean for SFT, mixed for PAFT) and a summary for the metadata."""
    trajectories, meta = build_trajectories(cfg)
    examples = encode_all(tokenizer, trajectories, cfg.max_length)
    perturbed = sum(1 for e in examples if e.perturbations)
    return examples, {**meta, "examples": len(examples), "perturbed_examples": perturbed}
