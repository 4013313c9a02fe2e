"""``openagent demo``: the product's loop on a model fine-tuned here, find → train → gate.

1. **SFT** on the short POI task families (one or two calls, one of them to refuse) until it does the clean
   job: at most ``sft_steps``, stopped earlier once it solves dev-split tasks at the gate's clean threshold
   (:mod:`training.dev_check`, every :data:`CHECK_EVERY` steps from half of them; its clean success on the gate's
   sample is printed against the threshold).
2. **The gate**: a real ``pytest`` session with the plugin runs the suite the demo writes (``gate/`` in the
   demo's folder) against the SFT checkpoint and prints the verdict per criterion; the shrunk minimal
   failing perturbation of the failing tier is shown.
3. **The data**: ``openagent data from-report`` (:func:`training.from_report.from_report`) turns the
   session's failures into PAFT rows: the oracle on train-split twins under train-pool perturbations.
4. **Two arms of the same compute from the same checkpoint**: PAFT (the rows mixed into clean episodes)
   and SFT continued on clean episodes only.
5. **The same gate on a fresh fixed sample** (another seed): a pytest session per agent, each the gate's fixed
   measurement and verdict without the property tests (they searched SFT's failures), on PAFT, SFT-continued and
   the SFT checkpoint side by side where the machine has the CPUs and the memory, then the oracle and the static
   baseline; the two arms compared case by case
   (:func:`training.paired.paired`): the failing tier's Δ and clean success with 95% intervals, a table, and a
   sentence saying what the run showed.

Every phase's output is kept in the demo's folder; a rerun (or a run killed at any point) continues where it
stopped: training from its checkpoints, the gate from its reports and the episode cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training import child, demo_gate
from training.config import SFTConfig
from training.demo_clock import EPISODE_STEPS, SEARCH_EPISODE_STEPS, Clock, Pace
from training.runs import peak_bytes

CHECK_EVERY = 10
"""Steps between the SFT's dev-split checks; they start at half its steps (SFT at 40 of 80 solved 22 of the
gate's 24 clean twins, at 50 all 24: docs/experiments.md)."""
SESSION_S = 15.0
"""Seconds a gate session on a checkpoint spends besides its episodes (pytest, the plugin, the model loaded)."""
CHECK_STEPS = 2.2
"""A check's cost in :class:`~training.demo_clock.Pace`'s evaluation unit (20 short dev episodes, greedy: 33 s
against 14.8 s a step in bf16, session 40)."""
ARM_STEPS = 0.75
"""An arm's step against an SFT step, each training in a process of its own: PAFT 0.85 (its failures' rows carry
other tool specs, so they share less of their prefix), SFT-continued 0.5 (session 41's default demo; the SFT's own
step carries its checks and its 50 steps' share of the machine's drift)."""
SIDE_BY_SIDE = 0.7
"""The arms' seconds side by side, a thread each, against one after the other with all the CPUs each: 143 s
against 207 (``benchmarks/bench_side_by_side.py``, 4 steps each, session 41)."""
SESSIONS_SIDE_BY_SIDE = 0.85
"""The fresh sample's gate sessions on the three checkpoints side by side, a thread each, against one after the
other with the threads each chooses (generation gains more from a second thread than training does): 224 s against
265 (``benchmarks/bench_fresh_gate.py``, session 42)."""

ARMS, FRESH = "PAFT and SFT-continued", "gate on a fresh sample"
"""The names of the arms' phase and the fresh sample's."""


@dataclass(frozen=True)
class LoopPlan:
    """What the loop trains and measures (from the demo's options)."""

    families: tuple[str, ...]
    sft_steps: int
    more_steps: int
    episodes: int
    batch_size: int
    n: int
    examples: int
    gate: tuple[str, ...]
    seed: int
    train_arms: bool
    until: float = 0.0  # the SFT stops once its dev-split checks reach this (0: all its steps)
    retrain: bool = False

    @property
    def fresh_seed(self) -> int:
        return self.seed + 1

    @property
    def sft_phase(self) -> str:
        return f"SFT (at most {self.sft_steps} steps)" if self.until else f"SFT-{self.sft_steps}"

    @property
    def check_from(self) -> int:
        return max(CHECK_EVERY, self.sft_steps // 2)


def gate_criteria(threshold: float) -> tuple[str, ...]:
    return (f"clean.success>={threshold}", "perception.delta>=-20", "interaction.delta>=-20")


def expected_seconds(plan: LoopPlan, pace: Pace) -> dict[str, float]:
    """Each phase's expected seconds at the probe's measured ``pace`` (``training.demo_clock``)."""
    episodes = 2 * len(demo_gate.GATE_TIERS) * plan.n  # cases and their clean twins
    search = len(demo_gate.GATE_TIERS) * demo_gate.episodes_per_test(plan.examples)
    episode_s, search_s = EPISODE_STEPS * pace.eval_step_s, SEARCH_EPISODE_STEPS * pace.eval_step_s
    phases = {
        plan.sft_phase: sft_seconds(plan, pace),
        "gate on SFT (pytest)": episodes * episode_s + search * search_s + SESSION_S,
        "from-report": 10.0,
    }
    if plan.train_arms:
        phases[ARMS] = 2 * (plan.more_steps * ARM_STEPS * pace.train_step_s + 20)  # one after the other
        checkpoints = 3 * (episodes * episode_s + SESSION_S)  # PAFT, SFT-continued, SFT
        phases[FRESH] = checkpoints + 10  # and the oracle's and the static baseline's sessions
    return phases


def sft_seconds(plan: LoopPlan, pace: Pace, stop: int | None = None) -> float:
    """The SFT's expected seconds if it stops after step ``stop`` (a check that reached the target), else after
    all its steps; its checks included (none after the last step: the run ends there)."""
    steps = plan.sft_steps if stop is None else stop
    checks = len(range(plan.check_from, min(steps + 1, plan.sft_steps), CHECK_EVERY)) if plan.until else 0
    return steps * pace.train_step_s + checks * CHECK_STEPS * pace.eval_step_s + 20


def run_loop(plan: LoopPlan, root: Path, base: str, train_settings: dict[str, Any], clock: Clock, say: Any,
             show: Any) -> dict[str, Any]:  # fmt: skip
    """Run the loop in ``root`` and return what the table, figure and summary need."""
    from sandbox.evaluation.report import Report
    from training.runs import META_FILE

    suite = demo_gate.write_suite(root / "gate", plan.families, plan.gate, plan.n, plan.examples)
    say(f"the gate's suite is {suite} (its gate in {suite.parent / 'pyproject.toml'}): read it, rerun it")
    sft_cfg = SFTConfig(out=str(root / "sft"), base=base, steps=plan.sft_steps, until_success=plan.until,
                        check_every=CHECK_EVERY, check_from=plan.check_from, **train_settings)  # fmt: skip
    until = (f", stopped earlier once it solves {sft_cfg.check_tasks} dev-split tasks at {plan.until:.0%} (the lower "
             f"bound of the 95% interval), checked every {CHECK_EVERY} steps from step {plan.check_from}")  # fmt: skip
    say(f"SFT: {'at most ' * bool(plan.until)}{sft_cfg.steps} steps × {sft_cfg.batch_size} episodes of the families "
        f"{', '.join(sft_cfg.task_families)}{until if plan.until else ''}")  # fmt: skip
    sft = clock.run(plan.sft_phase, lambda: _fit(sft_cfg, plan.sft_phase, say, plan.retrain))
    sft_steps = trained_steps(sft)
    sft_label = f"SFT-{sft_steps}"
    say(f"{sft_label}: the SFT checkpoint ({sft})")

    reports_dir = root / "reports"
    reports_dir.mkdir(exist_ok=True)
    cache = root / "gate" / ".openagent_cache"

    session_peak: int | None = None  # the largest peak memory of a gate session whose report was read

    def report_path(label: str, seed: int) -> Path:
        return reports_dir / f"{label.lower()}-seed{seed}.json"

    def gates(agents: list[tuple[str, str, Path]], seed: int, search: bool = True, phase: str = "") -> list[Any]:
        """The gate session on each ``(label, agent, since)`` at ``seed``, side by side where the machine has the
        CPUs and the memory (:func:`child.side_by_side`; ``phase`` re-planned then), or its report if one was
        written after ``since`` (the checkpoint's training, or for the oracle and the static baseline, the SFT's);
        each report and verdicts."""
        nonlocal session_peak
        path = {label: report_path(label, seed) for label, _, _ in agents}
        todo = []
        for label, agent, since in agents:
            if _newer(path[label], since):
                say(f"{label}: its gate session on seed {seed} has run already ({path[label]})")
            else:
                todo.append((label, agent, path[label]))
        threads, why = child.side_by_side(len(todo), session_peak, share_cpus=True)
        names = ", ".join(label for label, _, _ in todo)
        if threads:
            several = f"the sessions on {names} run side by side, {threads} CPU thread{'s' * (threads > 1)} each"
            if phase:
                why += f"; the plan for them now: about {clock.scale(phase, SESSIONS_SIDE_BY_SIDE) / 60:.1f} min"
            say(f"{several} ({why})")
            ended = demo_gate.run_sessions(root / "gate", todo, seed, cache, say, show, search, threads)
        else:
            if len(todo) > 1:
                say(f"the sessions on {names} run one after the other: {why}")
            ended = [demo_gate.run_sessions(root / "gate", [s], seed, cache, say, show, search)[0] for s in todo]
        for (label, _, _), code in zip(todo, ended, strict=True):
            demo_gate.check_ran(label, code)
            if not path[label].is_file():
                raise RuntimeError(f"the pytest session on {label} exited {code} and wrote no report")
        out = []
        for label, _, _ in agents:
            report = Report.load(path[label])
            session_peak = max(session_peak or 0, report.meta.get("peak_rss_bytes") or 0) or None
            result = demo_gate.verdicts(report, plan.gate)
            say(f"{label} on seed {seed}: gate {result.verdict}")
            for check in result.checks:
                show(f"  {check.verdict:<12} {check}")
            out.append((report, result))
        return out

    [(report, result)] = clock.run(
        "gate on SFT (pytest)", lambda: gates([(sft_label, f"hf:{sft}", sft / META_FILE)], plan.seed)
    )
    tier = demo_gate.failing_tier(report, result)
    shrunk = demo_gate.shrunk_failure(report, tier)
    if shrunk:
        say("the property test of the failing tier shrank its failure to:")
        show("\n".join("  " + line for line in shrunk.splitlines()))
    else:
        say("no property test failed on this run (Hypothesis found no case the agent solves clean and fails perturbed)")

    rows_file = root / "paft-rows.jsonl"
    report_file = report_path(sft_label, plan.seed)
    summary = clock.run("from-report", lambda: _rows(report_file, rows_file, plan.seed, say))
    out: dict[str, Any] = {"sft": sft, "sft_steps": sft_steps, "sft_report": report, "sft_gate": result,
                           "tier": tier, "shrunk": shrunk, "rows": summary}  # fmt: skip
    if not plan.train_arms or not summary["rows"]:
        if not summary["rows"]:
            say("no PAFT rows: nothing failed that the oracle could turn into training data; the loop stops here")
        return out

    total = plan.more_steps * plan.batch_size
    common = {**train_settings, "steps": plan.more_steps, "seed": plan.seed + 1, "base": str(sft), "warmup": 1}
    paft_cfg = SFTConfig(out=str(root / "paft"), **{**common, "episodes": max(1, total - summary["rows"])},
                         rows=str(rows_file))  # fmt: skip
    cont_cfg = SFTConfig(out=str(root / "sft-continued"), **{**common, "episodes": total})

    def arms() -> tuple[Path, Path]:
        todo = []
        for label, cfg in (("PAFT", paft_cfg), ("SFT-continued", cont_cfg)):
            data = f" ({summary['rows']} of them the failures' rows)" if cfg.rows else " (clean episodes)"
            say(f"{label}: {cfg.steps} steps × {cfg.batch_size} episodes from {sft_label}{data}")
            if not _reused(cfg, label, say, plan.retrain, after=rows_file):  # the rows came after SFT
                todo.append((label, cfg))
        threads, why = child.side_by_side(len(todo), peak_bytes(sft))
        names = " and ".join(label for label, _ in todo)
        if threads:
            for _, cfg in todo:
                cfg.threads = threads
            clock.scale(ARMS, SIDE_BY_SIDE)
            fresh_sft = report_path(sft_label, plan.fresh_seed)
            then = not _newer(fresh_sft, sft / META_FILE)  # after the arm with less to compute: its CPU would idle
            if then:
                clock.shift(FRESH, ARMS, 1 / 3)  # one of the three checkpoints' sessions
            say(f"{names} train side by side, {threads} CPU thread{'s' * (threads > 1)} each ({why}); the plan for "
                f"them now: about {clock.phases[ARMS].expected_s / 60:.1f} min")  # fmt: skip
            chains = [[child.training(label, cfg)] for label, cfg in todo]
            if then:
                say(f"{sft_label}'s gate session on the fresh sample (seed {plan.fresh_seed}) runs once {todo[-1][0]} "
                    f"has trained, beside the other arm")  # fmt: skip
                chains[-1].append(demo_gate.session(sft_label, root / "gate", f"hf:{sft}", fresh_sft, plan.fresh_seed,
                                                    cache, say, search=False, threads=threads))  # fmt: skip
            trainings, training_line = {label for label, _ in todo}, child.labelled(True)

            def line(label: str, text: str) -> None:
                if label in trainings:
                    training_line(label, text)
                else:  # the session's, as the fresh phase shows its sessions'
                    show(demo_gate.session_line(label, text))

            ended = child.relay_all(chains, line, lambda s: say(f"{names}: running, {s:.0f} s"))
            child.check_trained([(label, codes[0]) for (label, _), codes in zip(todo, ended, strict=True)])
            if then:
                demo_gate.check_ran(sft_label, ended[-1][1])
            clock.together(ARMS, sum(peak_bytes(cfg.out) or 0 for _, cfg in todo))
        else:
            if len(todo) > 1:
                say(f"{names} train one after the other, not side by side: {why}")
            for run in todo:
                child.train([run], say)
        return Path(paft_cfg.out), Path(cont_cfg.out)

    paft, cont = clock.run(ARMS, arms)

    def fresh() -> dict[str, Any]:
        say("the same gate on a fresh sample: its fixed measurement, without the property tests (they searched "
            f"{sft_label}'s failures), on PAFT, SFT-continued, {sft_label}, the oracle and the static "
            "baseline")  # fmt: skip
        models = (("PAFT", paft), ("SFT-continued", cont), (sft_label, sft))
        checkpoints = [(label, f"hf:{model}", model / META_FILE) for label, model in models]
        references = [(label, label, sft / META_FILE) for label in ("oracle", "static")]
        reports = {}
        for agents in (checkpoints, references):
            measured = gates(agents, plan.fresh_seed, False, FRESH if agents is checkpoints else "")
            reports.update({label: report for (label, _, _), (report, _) in zip(agents, measured, strict=True)})
        return reports

    out["fresh"] = clock.run(FRESH, fresh)
    out.update(paft=paft, continued=cont)
    return out


def _fit(cfg: SFTConfig, label: str, say: Any, retrain: bool, after: Path | None = None) -> Path:
    """Train ``cfg`` in a process of its own (``training.child``), unless :func:`_reused`; its folder."""
    if not _reused(cfg, label, say, retrain, after):
        child.train([(label, cfg)], say)
    return Path(cfg.out)


def _reused(cfg: SFTConfig, label: str, say: Any, retrain: bool, after: Path | None = None) -> bool:
    """Whether the finished run in ``cfg.out`` is reused: one of these options, newer than ``after`` (what it
    starts from). Otherwise ``cfg`` is set to replace a finished run of other options, an older one or any with
    ``retrain``, and to resume an unfinished one of these options from its checkpoints."""
    from training.runs import META_FILE, finished_run

    out = Path(cfg.out)
    if not retrain and finished_run(out, cfg.to_dict()) and (after is None or _newer(out / META_FILE, after)):
        say(f"{label}: reusing {out}, a finished run of these options (--retrain starts over)")
        return True
    cfg.resume, cfg.overwrite = not retrain, True  # the demo owns its folder
    return False


def trained_steps(model: Path) -> int:
    """The optimizer steps a finished run took (fewer than its options' when a check stopped it)."""
    from training.runs import read_meta

    meta = read_meta(model)
    if meta is None:
        raise RuntimeError(f"{model}: no finished training there")
    return int(meta["steps"])


def _rows(report: Path, rows: Path, seed: int, say: Any) -> dict[str, Any]:
    from training.from_report import from_report

    if _newer(rows, report) and (rows.with_suffix(".json")).is_file():
        import json

        say(f"reusing {rows} (written from {report})")
        return json.loads(rows.with_suffix(".json").read_text())
    say(f"$ openagent data from-report {report} --out {rows} --seed {seed}")
    summary = from_report(report, rows, per_failure=2, seed=seed)
    say(f"{summary['failures']} failing cases of {summary['records']} records → {summary['rows']} PAFT rows "
        f"(the oracle on train-split tasks of the same family under the same perturbations, train pool)")  # fmt: skip
    from training.runs import write_json

    write_json(rows.with_suffix(".json"), summary)
    return summary


def _newer(path: Path, than: Path) -> bool:
    return path.is_file() and than.is_file() and path.stat().st_mtime >= than.stat().st_mtime


def conclusion(compared: dict[str, Any], tier: str | None, tier_name: str) -> str:
    """One sentence on what the run showed, whatever the sign."""
    if tier is None or tier not in compared or "clean" not in compared:
        return "PAFT and SFT-continued could not be compared on the failing tier (no case of it in the sample)."
    d, clean = compared[tier], compared["clean"]
    low, high = d.interval
    if low > 0:
        verdict = f"PAFT recovered {tier_name}: {d} points against SFT-continued, an interval above zero"
    elif high < 0:
        verdict = f"PAFT did worse than SFT-continued on {tier_name}: {d} points, an interval below zero"
    else:
        verdict = (f"on {tier_name} PAFT and SFT-continued differ by {d} points, an interval that includes zero: "
                   f"no difference this sample can show")  # fmt: skip
    return f"{verdict}; clean success {clean} points (paired on {d.n} and {clean.n} cases, 95% intervals)."


def elapsed_since(start: float) -> str:
    seconds = time.perf_counter() - start
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
