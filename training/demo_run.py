"""``openagent demo`` (the loop): the plan, the phases, the table, the figure and the conclusion; everything it
prints is also written to ``demo.log`` in the demo's folder."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from training.demo_clock import Clock, Pace

if TYPE_CHECKING:
    from training.demo_loop import LoopPlan


class _Tee:
    """A text stream that writes to the terminal and to the demo's log, flushing both at once."""

    def __init__(self, stream: TextIO, log: TextIO) -> None:
        self.stream, self.log = stream, log

    def write(self, text: str) -> int:
        self.log.write(text)
        self.log.flush()
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()
        self.log.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def logged(path: Path) -> Iterator[None]:
    """Copy stdout and stderr into ``path`` (appended: a resumed demo's log follows the killed one's)."""
    with open(path, "a", buffering=1) as log:
        log.write(f"\n=== openagent demo, {time.strftime('%Y-%m-%d %H:%M:%S')} ===\n")
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(out, log), _Tee(err, log)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = out, err


def say(message: str) -> None:
    print(f"openagent demo: {message}", file=sys.stderr, flush=True)


def show(text: str) -> None:
    print(text, flush=True)


def run(cfg: Any) -> int:
    """``openagent demo``: the loop, or with ``--table`` the table (``training.demo.run_table``); 0. Everything it
    prints also goes to ``demo.log`` in its folder."""
    from training.demo import run_table
    from training.inference.base import openagent_home

    name = "paper" if cfg.paper else ("demo" if cfg.table else "loop") + ("-quick" if cfg.quick else "")
    root = Path(cfg.dir).expanduser() if cfg.dir else openagent_home() / name
    root.mkdir(parents=True, exist_ok=True)
    with logged(root / "demo.log"):
        return run_table(cfg, root) if cfg.table else run_loop_demo(cfg, root)


def run_loop_demo(cfg: Any, root: Path) -> int:
    """The loop in ``root``: plan, SFT, gate, rows, the two arms, the fresh gate, table, figure, conclusion; 0."""
    from training.demo import pct
    from training.demo_loop import expected_seconds, run_loop, sft_seconds

    plan = loop_plan(cfg)
    clock = Clock(say)
    say(f"working in {root} (seed {cfg.seed}); a rerun continues where this one stops")
    say(f"the task families: {', '.join(plan.families)} ({_family_traits(plan.families)})")
    base = clock.run("base model", lambda: _base(cfg.base))
    settings = loop_settings(cfg, plan)
    pace, measured = clock.run("probe", lambda: _probe(base, settings))
    clock.plan(expected_seconds(plan, pace))
    clock.show_plan(f"{measured}: a training step of 8 episodes about {pace.train_step_s:.0f} s")
    if plan.until and plan.check_from < plan.sft_steps:
        saved = sft_seconds(plan, pace) - sft_seconds(plan, pace, plan.check_from)
        say(f"  the plan counts all {plan.sft_steps} SFT steps; stopped by its first check (step {plan.check_from}), "
            f"the SFT takes about {saved / 60:.0f} min less")  # fmt: skip

    result = run_loop(plan, root, str(base), settings, clock, say, show)

    sft_clean = result["sft_report"].row("clean").clean
    reached = "reached" if sft_clean.value >= cfg.clean_target else "NOT reached"
    say(f"SFT-{result['sft_steps']} solved {pct(sft_clean.value)} of the clean twins ({sft_clean}), the "
        f"{pct(cfg.clean_target)} target {reached}")  # fmt: skip
    table = _finish(cfg, plan, result, root)
    show(clock.report())
    if cfg.json:
        from training.runs import write_json

        write_json(cfg.json, {"config": dataclasses.asdict(cfg), **table})
        say(f"table written to {cfg.json}")
    return 0


def _family_traits(families: tuple[str, ...]) -> str:
    """Why the loop trains on ``families``: what their tasks are like, in words."""
    from sandbox.evaluation.draw import task_pool

    drawn = task_pool(("poi",), "train", list(families))
    calls = sorted({t.n_calls for t in drawn})
    refusing = len({t.family for t in drawn if not t.solvable})
    count = " or ".join(map(str, calls)) if len(calls) < 3 else f"{calls[0]} to {calls[-1]}"
    refuse = {0: "", 1: ", one to refuse"}.get(refusing, f", {refusing} to refuse")
    why = ": short episodes, so SFT converges on them with fewer tokens than on every family, and quick to evaluate"
    return f"{count} call{'s' * (calls[-1] > 1)} each{refuse}{why * (calls[-1] <= 2)}"


def loop_plan(cfg: Any) -> LoopPlan:
    """The loop's :class:`~training.demo_loop.LoopPlan` from the demo's (checked) options."""
    from training.demo_loop import LoopPlan, gate_criteria

    return LoopPlan(
        families=tuple(cfg.task_families), sft_steps=cfg.loop_steps, more_steps=cfg.more_steps,
        episodes=cfg.loop_episodes, batch_size=cfg.batch_size, n=cfg.gate_n, examples=cfg.examples,
        gate=gate_criteria(cfg.clean_target), seed=cfg.seed, train_arms=not cfg.quick,
        until=0.0 if cfg.quick else cfg.clean_target, retrain=cfg.retrain,
    )  # fmt: skip


def loop_settings(cfg: Any, plan: LoopPlan) -> dict[str, Any]:
    """The options the loop's SFT trains with (``training.config.SFTConfig``'s), from the demo's and its plan."""
    from training.demo import train_settings

    return {**train_settings(cfg), "episodes": plan.episodes, "task_families": list(plan.families)}


def _base(base: str) -> Path:
    from training.sft import resolve_base

    return resolve_base(base)


def _probe(base: Path, settings: dict[str, Any]) -> tuple[Pace, str]:
    from training.config import SFTConfig
    from training.demo_clock import probe_pace

    return probe_pace(SFTConfig(out="", base=str(base), **settings), say)


def _finish(cfg: Any, plan: Any, result: dict[str, Any], root: Path) -> dict[str, Any]:
    """The table, the figure, the paired comparison and the sentence; what goes into ``--json``."""
    from training.demo import draw_figure, format_paired, format_table, summarize
    from training.demo_loop import conclusion
    from training.figure import SCOPES
    from training.paired import paired

    tier, sft = result["tier"], f"SFT-{result['sft_steps']}"
    names = dict(SCOPES)
    if "fresh" not in result:
        report = result["sft_report"]
        rows = {sft: summarize(report)}
        show(format_table(rows))
        clean = report.row("clean").clean
        found = f"what this run showed: {sft} solved {clean} of the clean twins"
        if tier is not None and report.row(tier) is not None:
            found += (f"; under {names.get(tier, tier)} shifts its success moved {report.row(tier).delta} points "
                      f"against the same tasks clean")  # fmt: skip
        show(f"{found} (95% intervals); the gate: {result['sft_gate'].verdict}.")
        say(f"{result['rows']['rows']} PAFT rows written to {root / 'paft-rows.jsonl'}; the default demo (without "
            f"--quick) trains on them and gates again")  # fmt: skip
        return {"rows": rows}
    reports = result["fresh"]
    order = [sft, "SFT-continued", "PAFT", "oracle", "static"]
    rows = {label: summarize(reports[label]) for label in order}
    steps_of = {sft: result["sft_steps"], "SFT-continued": result["sft_steps"] + plan.more_steps,
                "PAFT": result["sft_steps"] + plan.more_steps}  # fmt: skip
    for label, steps in steps_of.items():
        rows[label]["steps"] = steps
    show(f"on a fresh sample (seed {plan.fresh_seed}, {plan.n} cases per tier and their clean twins, families "
         f"{', '.join(plan.families)}):")  # fmt: skip
    show(format_table(rows))
    compared = paired(reports["PAFT"], reports["SFT-continued"])
    show(format_paired("PAFT", "SFT-continued", compared))
    sentence = conclusion(compared, tier, names.get(tier or "", str(tier)))
    show(f"what this run showed: {sentence}")
    draw_figure(rows, Path(cfg.figure) if cfg.figure else root / "demo.png")
    return {"rows": rows, "paired": {k: str(v) for k, v in compared.items()}, "conclusion": sentence,
            "failing_tier": tier}  # fmt: skip
