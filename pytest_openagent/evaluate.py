"""``openagent.evaluate``: a fixed-seed evaluation outside Hypothesis, run in batches through the cache."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_openagent.cache import EpisodeCache, prepare
from pytest_openagent.report import Record, Report
from pytest_openagent.strategies import TierSpec, _applies, _classes, _domains, _floor, _pool
from sandbox.agent import fingerprint
from sandbox.case import SANDBOX_VERSION, Case
from sandbox.perturbations import registry
from sandbox.perturbations.base import Perturbation, Pool
from sandbox.seeds import child_seed

DEFAULT_CACHE_DIR = Path(".openagent_cache")


def draw_cases(
    tiers: TierSpec = "all",
    n: int = 50,
    seed: int = 0,
    domain: str | Sequence[str] = "poi",
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = 1,
    pool: Pool = "eval",
) -> list[Case]:
    """``n`` perturbed cases per tier, deterministic in ``seed``; tiers without perturbations are skipped
    when ``tiers="all"`` and an error when asked for by name."""
    if n < 1:
        raise ValueError(f"n must be at least 1 case per tier, got {n}")
    tasks = _pool(_domains(domain), split)
    if names is not None:
        _classes(tiers, names)  # unknown names and names outside ``tiers`` fail here, with a hint
    out: list[Case] = []
    wanted = registry.normalize_tiers(tiers)
    for tier in wanted:
        named = [c for c in names if registry.get(c).tier == tier] if names is not None else None
        if (tiers == "all" and not registry.names(tier)) or named == []:
            continue
        classes = _classes(tier, named)
        rng = random.Random(child_seed(seed, "evaluate", tier))
        for _ in range(n):
            for _attempt in range(100):
                task = tasks[rng.randrange(len(tasks))]
                applicable = [c for c in classes if _applies(c, task)]
                if applicable:
                    break
            else:
                raise ValueError(f"no perturbation of tier {tier} applies to the {split} tasks of {domain}")
            kinds = rng.sample(applicable, k=rng.randint(1, min(max_stack, len(applicable))))
            stack: list[Perturbation] = [
                c(severity=rng.randint(_floor(c), c.max_severity), pool=pool, seed=rng.randrange(1000)) for c in kinds
            ]
            out.append(Case(task, tuple(stack)))
    return out


def evaluate(
    agent: Any,
    tiers: TierSpec = "all",
    n: int = 50,
    seed: int = 0,
    domain: str | Sequence[str] = "poi",
    *,
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = 1,
    batch_size: int = 64,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    max_steps: int | None = None,
    pool: Pool = "eval",
) -> Report:
    """Evaluate ``agent`` (an object or a spec such as ``"oracle"``) on ``n`` cases per tier and their clean twins.

    Cases go to the agent in batches of ``batch_size`` (a model agent generates for a batch at once);
    episodes are cached under ``cache_dir`` (``None`` turns the disk cache off). ``pool`` picks the
    perturbations' names and texts: ``"eval"`` (held out from training) or ``"train"`` (what PAFT trains on).
    """
    spec = agent if isinstance(agent, str) else None
    if spec is not None:
        from pytest_openagent.agents import load_agent

        agent = load_agent(spec)
    names = list(names) if names is not None else None
    cases = draw_cases(tiers, n, seed, domain, split, names, max_stack, pool)
    cache = EpisodeCache(prepare(Path(cache_dir)) / "episodes" if cache_dir is not None else None)
    fp = fingerprint(agent)
    records = []
    for start in range(0, len(cases), batch_size):
        batch = cases[start : start + batch_size]
        twins = [c.clean() for c in batch]
        episodes = cache.run(agent, [*batch, *twins], max_steps)
        for case, episode, clean in zip(batch, episodes[: len(batch)], episodes[len(batch) :], strict=True):
            records.append(Record.of("evaluate", fp, case, episode, clean))
        cache.flush()
    meta = {
        "agent": spec or fp, "seed": seed, "n": n, "tiers": registry.normalize_tiers(tiers),
        "domain": domain, "split": split, "pool": pool, "sandbox_version": SANDBOX_VERSION,
    }  # fmt: skip
    return Report(records, meta)
