"""Training data: the clean gold trajectories of SFT, and PAFT's mix of perturbed ones.

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
from typing import Any

from sandbox.seeds import child_seed
from training.config import PERTURBATION_FAMILIES, SFTConfig


def family_of(cls: type) -> str | None:
    """The PAFT family of a perturbation class, or ``None`` if it belongs to none.

    A class may say so itself (``paft_family``); otherwise its tier and shift decide: observation
    shifts are error feedback; renamings are symbolic; description and query changes are semantic.
    Domain transfer is never training data (the medical world is the held-out domain).
    """
    declared = getattr(cls, "paft_family", None)
    if declared is not None:
        return declared or None
    tier, shift, name = cls.tier, cls.shift, cls.name.lower()
    if shift == "domain":
        return None
    if shift == "observation" or tier == "interaction" or getattr(cls, "unsolvable", False):
        return "error_feedback"
    if shift == "action" and any(w in name for w in ("desc", "semantic", "trap", "schema", "distractor")):
        return "semantic"
    if shift == "action":
        return "symbolic"
    if shift == "query":
        return "semantic"
    return None


def train_perturbations(families: list[str] | None = None, names: list[str] | None = None) -> list[str]:
    """Registered perturbation names usable for PAFT: by explicit ``names``, else by ``families``."""
    from sandbox.perturbations import get
    from sandbox.perturbations import names as registered

    if names:
        for n in names:
            get(n)  # raises with "did you mean" on a typo
        return list(names)
    families = list(families or PERTURBATION_FAMILIES)
    unknown = sorted(set(families) - set(PERTURBATION_FAMILIES))
    if unknown:
        raise ValueError(f"unknown PAFT families {unknown}; expected some of {list(PERTURBATION_FAMILIES)}")
    return [n for n in registered() if family_of(get(n)) in families]


def draw_perturbation(name: str, task: Any, seed: int) -> Any | None:
    """A train-pool instance of ``name`` for ``task`` (severity drawn), or ``None`` if it does not apply."""
    from sandbox.perturbations import get

    cls = get(name)
    r = random.Random(seed)
    severity = r.randint(cls.min_severity, cls.max_severity) if cls.min_severity > 0 else max(1, cls.max_severity)
    spec = cls(severity=severity, pool="train", seed=seed)
    return spec if spec.applies_to(task) else None


def paft_cases(tasks: list[Any], alpha: float, perturbation_names: list[str], seed: int) -> list[Any]:
    """Cases over ``tasks``: a share ``alpha`` perturbed (one train-pool perturbation each), the rest clean."""
    from sandbox.case import Case

    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if alpha > 0 and not perturbation_names:
        raise ValueError("PAFT needs perturbations: none of the registered ones is in the families asked for")
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


def build_examples(cfg: SFTConfig, tokenizer: Any) -> tuple[list, dict]:
    """Token examples for ``cfg`` (clean for SFT, mixed for PAFT) and a summary for the metadata."""
    from sandbox import tasks
    from sandbox.case import Case
    from training.data import encode_all, gold_trajectories

    train_tasks = tasks(cfg.domain, "train", cfg.episodes, cfg.seed)
    if cfg.alpha > 0:
        names = train_perturbations(cfg.families, cfg.perturbations)
        cases = paft_cases(train_tasks, cfg.alpha, names, cfg.seed)
    else:
        names, cases = [], [Case(t) for t in train_tasks]
    trajectories = gold_trajectories(cases)
    examples = encode_all(tokenizer, trajectories, cfg.max_length)
    used = Counter(p.name for c in cases for p in c.perturbations)
    perturbed = sum(1 for e in examples if e.perturbations)
    meta = {
        "domain": cfg.domain, "split": "train", "tasks": len(train_tasks), "cases": len(cases),
        "examples": len(examples), "alpha": cfg.alpha, "perturbed_examples": perturbed,
        "pool": "train", "perturbations": dict(sorted(used.items())), "candidates": names,
    }  # fmt: skip
    return examples, meta
