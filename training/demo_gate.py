"""The demo's CI gate: a robustness suite the demo writes where the user can read and rerun it, run by a real
``pytest`` session with the plugin against a checkpoint, and what that session found, read back from its report.

The suite is what a team would commit (``test_agent_robustness.py`` and the gate in ``pyproject.toml``): one
metamorphic property per tier (the agent must solve the perturbed twin of a task it solves clean), whose
failure Hypothesis shrinks to the smallest perturbation that breaks the agent, and the gate the fixed
measurement must meet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sandbox.evaluation.draw import task_pool
from training import child
from training.runs import write_text

GATE_TIERS = ("perception", "interaction")
"""The tiers the demo's gate measures: renamed or reworded tools and requests, and what tools answer."""

SUITE = '''"""The robustness suite `openagent demo` gates its checkpoints with; a team would commit this file.

Rerun it yourself against any checkpoint (the gate is in pyproject.toml beside this file):

    cd {folder} && pytest --openagent-agent hf:{example}

Each test is a property over perturbed cases of one tier, on tasks of the demo's families: the agent must
solve the perturbed twin of a task it solves clean. When it does not, Hypothesis shrinks the case to the
smallest perturbation that still breaks it, and pytest prints that case. Each test runs at most EPISODES new
episodes (its search and its shrinking together; the episode cache's cost nothing), so that a weak checkpoint,
which fails many tasks clean and runs to its step limit, costs no more than a strong one.
"""

import pytest_openagent as openagent
from sandbox import tasks

FAMILIES = {families!r}
TASKS = [t.id for t in tasks("poi", "test", {count}, 0, FAMILIES)]
EXAMPLES = {examples}
EPISODES = {episodes}
{tests}'''

TEST = """

@openagent.perturb(tier="{tier}", tasks=TASKS, max_examples=EXAMPLES, max_episodes=EPISODES, relation="invariant")
def test_{tier}_shift_keeps_what_it_solves(agent, case):
    case.run(agent)
"""

PYPROJECT = """# The gate of the demo's robustness suite: `pytest` fails when the fixed measurement misses a criterion.
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.openagent]
gate = {gate}
tiers = {tiers}
families = {families}
n = {n}
"""


SEARCHED_TASKS = 40
"""The test-split tasks the property tests draw from (all of them where the families have fewer)."""


def episodes_per_test(examples: int) -> int:
    """The new episodes each property test of the suite may run: two for each example (a case and its clean twin)
    and one more each for shrinking the failure it finds."""
    return 3 * examples


def write_suite(folder: Path, families: Sequence[str], gate: Sequence[str], n: int, examples: int) -> Path:
    """Write the suite and its gate into ``folder`` (atomically); the test file."""
    folder.mkdir(parents=True, exist_ok=True)
    tests = "".join(TEST.format(tier=tier) for tier in GATE_TIERS)
    count = min(SEARCHED_TASKS, len(task_pool(("poi",), "test", list(families))))
    suite = SUITE.format(
        folder=folder, example="../sft", families=list(families), count=count, examples=examples,
        episodes=episodes_per_test(examples), tests=tests,
    )  # fmt: skip
    write_text(folder / "test_agent_robustness.py", suite)
    toml = PYPROJECT.format(
        gate=json.dumps(list(gate)),
        tiers=json.dumps(",".join(GATE_TIERS)),
        families=json.dumps(",".join(families)),
        n=n,
    )  # JSON strings and lists are TOML ones
    write_text(folder / "pyproject.toml", toml)
    return folder / "test_agent_robustness.py"


def run_session(
    folder: Path, agent: str, report: Path, seed: int, cache: Path, say: Callable[[str], None],
    show: Callable[[str], None], search: bool = True,
) -> int:  # fmt: skip
    """``pytest`` on the suite in ``folder`` against ``agent`` (the fixed measurement at ``seed`` written to
    ``report``), its output shown line by line as it comes; pytest's exit code. Without ``search``, the property
    tests (marked ``openagent``) are deselected: the session measures and gates only."""
    return run_sessions(folder, [(agent, agent, report)], seed, cache, say, show, search)[0]


def run_sessions(
    folder: Path, sessions: Sequence[tuple[str, str, Path]], seed: int, cache: Path, say: Callable[[str], None],
    show: Callable[[str], None], search: bool = True, threads: int = 0,
) -> list[int]:  # fmt: skip
    """:func:`run_session` for each ``(label, agent, report)`` of ``sessions`` at once, each with ``threads`` CPU
    threads (0: its own choice), each line after its session's label where there are several; pytest's exit
    codes."""
    commands = [session(label, folder, agent, report, seed, cache, say, search, threads)
                for label, agent, report in sessions]  # fmt: skip
    several = len(sessions) > 1
    running = f"gate sessions on {', '.join(c.label for c in commands)}" if several else "gate session"
    ended = child.relay_all(
        [[command] for command in commands], lambda label, line: show(session_line(label, line, several)),
        lambda seconds: say(f"{running} running, {seconds:.0f} s (pytest prints as each test ends)"),
    )  # fmt: skip
    return [code for [code] in ended]


def session_line(label: str, line: str, several: bool = True) -> str:
    """A line of a gate session's output as the demo shows it: indented, after its session's label where
    several sessions run."""
    return "  | " + f"{label} | " * several + line


def session(
    label: str, folder: Path, agent: str, report: Path, seed: int, cache: Path, say: Callable[[str], None],
    search: bool = True, threads: int = 0,
) -> child.Command:  # fmt: skip
    """The child that runs :func:`run_session`'s ``pytest`` (said as it is made), with ``threads`` CPU threads (0: its
    own choice)."""
    command = [
        "pytest", str(folder), "--rootdir", str(folder), "-q", "-p", "no:randomly", "--openagent-agent", agent,
        "--openagent-seed", str(seed), "--openagent-report", str(report), "--openagent-cache-dir", str(cache),
        *([] if search else ["-m", "not openagent"]),
    ]  # fmt: skip
    say("$ " + " ".join(command))
    return child.Command(label, ["-m", *command], folder, {"OMP_NUM_THREADS": str(threads)} if threads else None)


BROKEN_SESSION = {2: "interrupted, as when a test module fails to import", 3: "an internal error", 4: "a usage error"}
"""pytest's exit codes for a session whose tests did not all run (a failing gate exits 1, a session of the fixed
measurement alone 5, no tests collected)."""


def check_ran(label: str, code: int) -> None:
    """Raise if the gate session on ``label`` exited with one of :data:`BROKEN_SESSION`'s codes: its report, if it
    wrote one, does not hold what the suite asks."""
    if code in BROKEN_SESSION:
        raise RuntimeError(f"the pytest session on {label} exited {code}: {BROKEN_SESSION[code]} (its output is above)")


def verdicts(report: Any, gate: Sequence[str]) -> Any:
    """The gate's result on ``report`` (``sandbox.evaluation.gate.check``): a verdict per criterion."""
    from sandbox.evaluation.gate import check

    return check(report, list(gate))


def failing_tier(report: Any, result: Any) -> str | None:
    """The tier whose criterion failed with the largest loss against the clean twins, else the worst tier."""
    failed = [c.text.split(".", 1)[0] for c in result.checks if c.verdict == "FAIL"]
    tiers = [t for t in GATE_TIERS if report.row(t) is not None]
    candidates = [t for t in tiers if t in failed] or tiers
    return min(candidates, key=lambda t: report.row(t).delta.points, default=None)


def shrunk_failure(report: Any, tier: str | None) -> str | None:
    """The minimal failing case the property test of ``tier`` shrank to, as the report keeps it: its
    perturbation, outcome and trajectory; ``None`` if that test found none."""
    found = [f for f in report.failures if tier is None or f.record.tier == tier] or list(report.failures)
    if not found:
        return None
    f = found[0]
    test = f.record.test.rsplit("::", 1)[-1]
    head = f"{test} shrank its failure to {f.record.label}"
    return f"{head}, outcome {f.record.outcome} (solved clean: {f.record.clean_success})\n{f.explanation}"
