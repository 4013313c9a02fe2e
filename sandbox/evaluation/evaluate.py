"""``evaluate``: the fixed sample of ``draw_cases`` (a :class:`~sandbox.evaluation.sample.Sample`) run in batches
through the cache, as a report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from sandbox.agent import fingerprint
from sandbox.case import SANDBOX_VERSION
from sandbox.errors import UsageError
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EPISODES, EpisodeCache, prepare
from sandbox.evaluation.cost import peak_rss_bytes
from sandbox.evaluation.criterion import Criterion
from sandbox.evaluation.draw import domain_label, draw_sample
from sandbox.evaluation.gate import check, criteria_of
from sandbox.evaluation.report import Report
from sandbox.evaluation.runner import Runner
from sandbox.evaluation.sample import DomainSpec, Sample, TierSpec
from sandbox.evaluation.sequential import run_sequential
from sandbox.perturbations import registry
from sandbox.perturbations.base import Pool


def evaluate(
    agent: Any,
    tiers: TierSpec = "all",
    n: int = 50,
    seed: int = 0,
    domain: DomainSpec = "poi",
    *,
    split: str = "test",
    names: Iterable[str] | None = None,
    max_stack: int = 1,
    batch_size: int = 64,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    max_steps: int | None = None,
    pool: Pool = "eval",
    families: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    drift: bool = False,
    sequential: str | Sequence[Criterion] | None = None,
) -> Report:
    """Evaluate ``agent`` (an object or a spec such as ``"oracle"``) on ``n`` cases per tier and their clean twins.

    Cases go to the agent in batches of ``batch_size`` (a model agent generates for a batch at once);
    episodes are cached under ``cache_dir`` (``None`` turns the disk cache off). ``pool`` picks the
    perturbations' names and texts: ``"eval"`` (held out from training) or ``"train"`` (what PAFT trains on).
    Raises :class:`~sandbox.evaluation.runner.AgentFailure` when most episodes end as ``agent_error``
    of one cause: a dead server is not a 0% agent. ``progress(done, total)`` counts the episodes (the cases
    and their clean twins) as each ends or is read back from the cache. ``max_steps`` is the step limit of every
    episode; ``None`` gives each case its own (``Case.max_steps``: the plan's length plus what its perturbations
    add). ``drift`` also draws ``n`` drift cases per tier (perturbations that start after turn k), reported in rows
    ``<tier>-drift`` beside the tier's static cases. ``sequential`` (a gate's criteria) runs the sample in rounds
    and stops each criterion once its verdict is settled (:mod:`sandbox.evaluation.sequential`).
    """
    sample = Sample(tiers, n, seed, domain, split, names, max_stack, pool, families, drift)
    return evaluate_sample(
        agent, sample, batch_size=batch_size, cache_dir=cache_dir, max_steps=max_steps, progress=progress,
        sequential=sequential,
    )  # fmt: skip


def evaluate_sample(
    agent: Any,
    sample: Sample,
    *,
    batch_size: int = 64,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    max_steps: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    sequential: str | Sequence[Criterion] | None = None,
) -> Report:
    """:func:`evaluate` on the cases of ``sample``."""
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise UsageError(
            f"max_steps={max_steps!r}: give a whole number of turns (at least 1), or None for each case's own"
        )
    spec = agent if isinstance(agent, str) else None
    if spec is not None:
        from sandbox.evaluation.specs import load_agent

        agent = load_agent(spec)
    criteria = None if sequential is None else criteria_of(sequential)
    names = list(sample.names) if sample.names is not None else None
    families = list(sample.families) if sample.families is not None else None
    cache = EpisodeCache(prepare(Path(cache_dir)) / EPISODES if cache_dir is not None else None)
    cases = draw_sample(sample)
    started = time.perf_counter()
    runner = Runner(cache)
    runner.test = "evaluate"
    if criteria is None:
        records, stopping = runner.run_batches(agent, cases, batch_size, max_steps, progress), None
    else:
        records, stopping = run_sequential(
            runner, agent, cases, criteria, lambda part, c: check(part, [c]).checks[0], batch_size, max_steps, progress
        )
    asked = registry.normalize_tiers(sample.tiers)
    named = None if names is None else {registry.get(name).tier for name in names}
    drawn = {p.tier for c in cases for p in c.perturbations}
    meta = {
        "agent": spec or fingerprint(agent), "seed": sample.seed, "n": sample.n, "tiers": asked,
        "tiers_skipped": [t for t in asked if t not in drawn and (named is None or t in named)],
        "names": names, "domain": domain_label(sample.domain), "split": sample.split, "pool": sample.pool,
        "max_stack": sample.max_stack, "families": families, "max_steps": max_steps, "drift": sample.drift,
        "sandbox_version": SANDBOX_VERSION, "episodes_run": cache.misses, "episodes_cached": cache.hits,
        "wall_s": round(time.perf_counter() - started, 3), "peak_rss_bytes": peak_rss_bytes(),
        "cache_hits": {kind: sorted(keys) for kind, keys in runner.cache_hits.items()},
    }  # fmt: skip
    if stopping is not None:
        meta["sequential"] = stopping
    server_report = getattr(agent, "server_report", None)
    if callable(server_report):  # an agent behind a server: what the server said of itself, and the traffic
        meta["server"] = server_report()
    return Report(records, meta)
