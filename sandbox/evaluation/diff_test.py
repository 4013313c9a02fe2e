"""``diff_test``: a team's own release, between two ``tools/list`` snapshots, tested on its world.

The world is the old release: an MCP server (``--mcp``, with the user's tasks) or a registered domain whose tools
the old snapshot lists (named, or found by its tool names). The release (:mod:`sandbox.perturbations.evolution
.snapshot`) is applied as one perturbation, ``release_diff``, from the start or after turn ``after`` (drift). Each
task whose tools the release touches gets a case: the oracle proves the new surface still solves it, or the task
is named as one the release broke for every agent (and is then a case to refuse); with an agent, its verdict on
every case.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sandbox.case import SANDBOX_VERSION, Case
from sandbox.errors import UsageError
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR, EPISODES, EpisodeCache, prepare
from sandbox.evaluation.draw import check_tasks
from sandbox.evaluation.runner import Health, WorldFailed
from sandbox.files import write_atomically
from sandbox.perturbations.evolution.diff import ReleaseDiff
from sandbox.perturbations.evolution.snapshot import derive, read_snapshot, summary

SCHEMA = "pytest-openagent/diff-test"


@dataclass
class TaskVerdict:
    task: str
    broken: str | None
    """Why the release broke the task for every agent; ``None`` where the new surface still solves it."""
    oracle: str
    """The oracle's outcome: ``success`` on a case that stays solvable, ``refused`` on one to refuse."""
    solvable: bool = True
    """Whether the case is solvable: not where the release broke it, nor where the task is one to refuse."""
    agent: str | None = None
    agent_right: bool | None = None
    """Whether the agent solved the case (refused, where the release broke the task); ``None`` without an agent."""
    explanation: str = ""
    """The agent's episode, explained, where it failed."""

    @property
    def oracle_right(self) -> bool:
        return self.oracle == ("success" if self.solvable else "refused")


@dataclass
class DiffTest:
    release: list[str]
    after: int
    tasks: int
    verdicts: list[TaskVerdict] = field(default_factory=list)
    untouched: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def broken(self) -> list[TaskVerdict]:
        return [v for v in self.verdicts if v.broken]

    @property
    def oracle_failures(self) -> list[TaskVerdict]:
        return [v for v in self.verdicts if not v.oracle_right]

    @property
    def agent_failures(self) -> list[TaskVerdict]:
        return [v for v in self.verdicts if v.agent_right is False]

    def text(self, show: int = 5) -> str:
        onset = f"after turn {self.after}" if self.after else "from the start"
        lines = [f"release ({len(self.release)} changes), applied {onset}:", *(f"  {line}" for line in self.release)]
        lines.append(f"{len(self.verdicts)} of {self.tasks} tasks touched by it; {len(self.broken)} broken for "
                     f"every agent; the oracle right on {len(self.verdicts) - len(self.oracle_failures)}")  # fmt: skip
        for v in self.verdicts:
            agent = f"; agent: {v.agent}{'' if v.agent_right else ' (wrong)'}" if v.agent is not None else ""
            state = f"BROKEN: {v.broken}" if v.broken else "solvable" if v.solvable else "to refuse (as before)"
            lines.append(f"  {v.task}: {state}; oracle: {v.oracle}{agent}")
        for v in [v for v in self.agent_failures if v.explanation][:show]:
            lines.append(f"\n{v.task}:\n{v.explanation}")
        return "\n".join(lines)

    def to_json(self, path: str | Path) -> None:
        data = {"schema": SCHEMA, **asdict(self)}
        write_atomically(Path(path), json.dumps(data, indent=2) + "\n")


def find_world(old: dict[str, Any], domain: str | None) -> str:
    """The domain the old snapshot describes: ``domain`` (checked), else the one registered domain that has every
    tool the snapshot lists."""
    from sandbox.domains import DOMAINS, get_domain

    listed = set(old)
    if domain is not None:
        have = {t.name for t in get_domain(domain).tools}
        strange = sorted(listed - have)
        if strange:
            raise UsageError(f"the old snapshot lists tools the world {domain!r} does not have ({', '.join(strange)}); "
                             "take OLD from the release the world runs (openagent mcp-proxy --snapshot)")  # fmt: skip
        return domain
    found = [name for name, d in DOMAINS.items() if listed <= {t.name for t in d.tools}]
    if len(found) != 1:
        why = "no registered domain has" if not found else f"several domains ({', '.join(found)}) have"
        raise UsageError(f"{why} every tool the old snapshot lists; name the world with --domain NAME or --mcp SERVER")
    return found[0]


def diff_test(
    domain: str,
    old: str | Path,
    new: str | Path,
    *,
    agent: Any = None,
    after: int = 0,
    split: str = "test",
    per_family: int | None = None,
    seed: int = 0,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    batch_size: int = 64,
    max_steps: int | None = None,
) -> DiffTest:
    """Apply the release from ``old`` to ``new`` (snapshot files) to ``domain`` (see :func:`find_world`) and run
    the oracle, and ``agent`` where given, on every task whose tools it touches."""
    from sandbox.agents import OracleAgent

    before = read_snapshot(old)
    release = derive(before, read_snapshot(new))
    domain = find_world(before, domain)
    if not release:
        raise UsageError(f"{old} and {new} list the same tools: there is no release to test")
    spec = ReleaseDiff.between(release, seed=seed, after=after)
    tasks = check_tasks(domain, split, None, per_family, ())
    cases = [Case(t, (spec,)) for t in tasks if t.plan and spec.applies_to(t)]
    cache = EpisodeCache(prepare(Path(cache_dir)) / EPISODES if cache_dir is not None else None)

    def run(who: Any) -> list[Any]:
        episodes = cache.run(who, cases, max_steps, window=batch_size)
        health = Health()
        health.add(episodes)
        if health.world_failure() is not None:
            raise WorldFailed(health.world_failure())
        return episodes

    by_oracle = run(OracleAgent())
    by_agent = run(agent) if agent is not None else [None] * len(cases)
    verdicts = []
    for case, o, a in zip(cases, by_oracle, by_agent, strict=True):
        failed = a is not None and not a.success
        verdicts.append(TaskVerdict(case.task.id, spec.broken(case.task), o.outcome, o.solvable,
                                    a.outcome if a else None, a.success if a else None,
                                    a.explain() if failed else ""))  # fmt: skip
    meta = {"old": str(old), "new": str(new), "domain": domain, "seed": seed, "split": split,
            "sandbox_version": SANDBOX_VERSION, "spec": spec.to_dict()}  # fmt: skip
    return DiffTest(summary(release), after, len(tasks), verdicts, len(tasks) - len(cases), meta)
