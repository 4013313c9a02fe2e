"""The demo's loop, piece by piece: the suite it writes gated in a real pytest session, the shrunk failure, the
rows from the report, PAFT training on them, the conclusion, and the progress lines of a training run."""

from __future__ import annotations

import json
import struct

import pytest

FAMILIES = ("phone", "hours", "unknown_place")


@pytest.fixture(scope="module")
def static_session(tmp_path_factory):
    """The demo's suite gated against the static baseline, which solves the clean world and breaks under shifts."""
    from training import demo_gate
    from training.demo_loop import gate_criteria

    folder = tmp_path_factory.mktemp("loop") / "gate"
    suite = demo_gate.write_suite(folder, FAMILIES, gate_criteria(0.8), n=10, examples=3)
    report = folder.parent / "static.json"
    lines: list[str] = []
    code = demo_gate.run_session(folder, "static", report, 0, folder / ".cache", lines.append, lines.append)
    return suite, report, code, lines


def test_the_written_suite_gates_in_pytest_and_shrinks_the_failing_tiers_case(static_session):
    from sandbox.evaluation.report import Report
    from training import demo_gate
    from training.demo_loop import gate_criteria

    suite, path, code, lines = static_session
    assert "pytest --openagent-agent hf:" in suite.read_text()  # how a reader reruns it
    assert code == 1, "\n".join(lines)  # a property test failed, and the gate did not pass: pytest's TESTS_FAILED
    assert any("openagent gate " in line for line in lines)
    report = Report.load(path)
    assert report.meta["families"] == list(FAMILIES)
    assert {r.family for r in report.records} <= set(FAMILIES)
    result = demo_gate.verdicts(report, gate_criteria(0.8))
    assert result.verdict != "PASS" and result.checks[0].verdict == "PASS"  # clean: the static baseline solves it
    tier = demo_gate.failing_tier(report, result)
    assert tier in demo_gate.GATE_TIERS
    shrunk = demo_gate.shrunk_failure(report, tier)
    assert shrunk is not None and f"test_{tier}_shift_keeps_what_it_solves shrank its failure to" in shrunk


def test_a_session_without_search_measures_and_gates_only(static_session, tmp_path):
    from sandbox.evaluation.report import Report
    from training import demo_gate

    suite, _, _, _ = static_session
    report, lines = tmp_path / "static.json", []
    demo_gate.run_session(suite.parent, "static", report, 1, tmp_path / ".cache", lines.append, lines.append, False)
    assert any("openagent gate " in line for line in lines), "\n".join(lines)
    assert any("2 deselected" in line for line in lines), "\n".join(lines)
    measured = Report.load(report)
    assert measured.meta["seed"] == 1 and measured.records and not measured.failures


def test_sessions_side_by_side_each_measure_into_their_own_report_their_lines_labelled(static_session, tmp_path):
    from sandbox.evaluation.report import Report
    from training import demo_gate

    suite, _, _, _ = static_session
    sessions = [(label, agent, tmp_path / f"{label}.json") for label, agent in (("O", "oracle"), ("S", "static"))]
    lines: list[str] = []
    codes = demo_gate.run_sessions(suite.parent, sessions, 1, tmp_path / ".cache", lines.append, lines.append,
                                   search=False, threads=1)  # fmt: skip
    assert codes == [5, 5], "\n".join(lines)  # every test deselected: pytest's NO_TESTS_COLLECTED
    for label, agent, report in sessions:
        assert any(line.startswith(f"  | {label} | ") and "openagent gate " in line for line in lines)
        meta = Report.load(report).meta
        assert meta["agent"] == agent and meta["peak_rss_bytes"] > 2**20  # what a session needs, for the next
    oracle, static = (Report.load(report).row("perception").delta.points for _, _, report in sessions)
    assert oracle == 0 and static < 0


def test_the_reports_failures_become_rows_that_paft_trains_on(static_session, tiny_base, tmp_path):
    from training.config import SFTConfig
    from training.from_report import from_report
    from training.sft import train

    _, path, _, _ = static_session
    summary = from_report(path, tmp_path / "rows.jsonl", per_failure=1)
    assert summary["rows"] > 0
    cfg = SFTConfig(
        out=str(tmp_path / "paft"), base=str(tiny_base), steps=1, batch_size=2, episodes=2, rows=str(tmp_path /
        "rows.jsonl"), task_families=list(FAMILIES), threads=1, save_every=0,
    )  # fmt: skip
    assert cfg.kind == "paft"
    data = json.loads((train(cfg) / "openagent-train.json").read_text())["data"]
    assert data["rows"]["count"] == summary["rows"] and data["tasks"] == 2
    assert data["trajectories"] == data["examples"] == 2 + summary["rows"]


def test_rows_that_are_not_chat_rows_are_a_usage_error_naming_the_line(tmp_path):
    from sandbox.errors import UsageError
    from training.dataset import read_rows

    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"messages": [], "tools": []}\n{"text": "no messages"}\n')
    with pytest.raises(UsageError, match="line 2: not a chat row"):
        read_rows(str(bad))
    with pytest.raises(UsageError, match="cannot read it"):
        read_rows(str(tmp_path / "missing.jsonl"))


def test_the_conclusion_says_what_the_interval_shows_whatever_the_sign():
    from sandbox.metrics import PairedDelta
    from training.demo_loop import conclusion

    clean = PairedDelta(18, 1, 1, 0)
    up = conclusion({"interaction": PairedDelta(2, 9, 0, 9), "clean": clean}, "interaction", "tier 2")
    assert up.startswith("PAFT recovered tier 2") and "above zero" in up
    down = conclusion({"interaction": PairedDelta(2, 0, 9, 9), "clean": clean}, "interaction", "tier 2")
    assert "did worse" in down and "below zero" in down
    tie = conclusion({"interaction": PairedDelta(5, 2, 2, 11), "clean": clean}, "interaction", "tier 2")
    assert "includes zero" in tie and "clean success" in tie


def _png_width(path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


def test_the_figure_leaves_out_the_steps_panel_when_the_rows_have_one_step_count(tmp_path):
    pytest.importorskip("matplotlib")
    from training.figure import draw

    row = {"clean": 0.5, "success_clean": 0.5, "success_perception": 0.25, "steps": 15}
    one = draw({"SFT-15": row, "oracle": {"success_clean": 1.0, "success_perception": 1.0}}, tmp_path / "one.png")
    two = draw({"SFT-15": row, "SFT-30": {**row, "steps": 30}}, tmp_path / "two.png")
    assert _png_width(one) < _png_width(two)


def test_a_training_run_prints_a_line_per_step_from_its_start(tiny, tmp_path, capsys):
    from training.config import SFTConfig
    from training.sft import train

    train(SFTConfig(out=str(tmp_path / "sft"), base=str(tiny), steps=2, batch_size=1, episodes=2, threads=1,
                    save_every=0))  # fmt: skip
    err = capsys.readouterr().err
    assert "openagent train: sft: starting of 2 steps" in err
    assert "step 1/2, loss" in err and "s left" in err and "step 2/2, loss" in err
    assert "\r" not in err  # lines a log file keeps, not a bar redrawn in place


def test_the_demo_refuses_a_clean_target_outside_0_1_before_it_trains(tmp_path, capsys):
    from pytest_openagent.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["demo", "--dir", str(tmp_path / "d"), "--clean-target", "80"])
    assert exited.value.code == 2 and "--clean-target must be in (0, 1], got 80.0" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_the_quick_loop_ends_with_the_table_and_a_sentence_with_intervals(tmp_path, capsys):
    from sandbox.evaluation import evaluate
    from training import demo_gate
    from training.demo import DemoConfig
    from training.demo_loop import LoopPlan, gate_criteria
    from training.demo_run import _finish

    report = evaluate("static", list(demo_gate.GATE_TIERS), n=4, families=list(FAMILIES), cache_dir=None)
    gate = gate_criteria(0.8)
    plan = LoopPlan(FAMILIES, 15, 20, 120, 8, 4, 2, gate, 0, train_arms=False)
    result = {"sft_report": report, "sft_gate": demo_gate.verdicts(report, gate), "tier": "perception",
              "rows": {"rows": 3}, "sft_steps": 15}  # fmt: skip
    _finish(DemoConfig(quick=True), plan, result, tmp_path)
    out = capsys.readouterr().out
    assert "SFT-15" in out and "bad calls" in out
    assert "what this run showed: SFT-15 solved 100.0% [" in out and "under tier 1 shifts its success moved -" in out


def test_the_plan_names_the_sft_by_its_cap_and_counts_its_checks():
    from training.demo_clock import Pace
    from training.demo_loop import CHECK_STEPS, LoopPlan, expected_seconds, gate_criteria, sft_seconds

    plan = LoopPlan(FAMILIES, 80, 16, 320, 8, 12, 4, gate_criteria(0.8), 0, train_arms=True, until=0.8)
    pace = Pace(train_step_s=10.0, eval_step_s=10.0)
    checked = expected_seconds(plan, pace)
    assert plan.check_from == 40  # checks at 40, 50, 60 and 70:
    assert checked["SFT (at most 80 steps)"] == pytest.approx((80 + 4 * CHECK_STEPS) * 10 + 20)
    assert sft_seconds(plan, pace, stop=40) == pytest.approx((40 + CHECK_STEPS) * 10 + 20)  # stopped by its first
    assert sft_seconds(plan, pace, stop=50) == pytest.approx((50 + 2 * CHECK_STEPS) * 10 + 20)
    unchecked = expected_seconds(LoopPlan(FAMILIES, 15, 16, 120, 8, 4, 1, plan.gate, 0, train_arms=False), pace)
    assert unchecked["SFT-15"] == 15 * 10 + 20


def test_the_plan_counts_training_in_training_steps_and_evaluation_in_the_probes_unit():
    """In fp32 a training step is cheaper against the probe than in bf16, evaluation is not: a plan whose training
    step is 7.4 s and whose evaluation unit is 10 s trains faster and gates as slowly as one at 10 s for both."""
    from training.demo_clock import Pace
    from training.demo_loop import ARMS, CHECK_STEPS, FRESH, LoopPlan, expected_seconds, gate_criteria, sft_seconds

    plan = LoopPlan(FAMILIES, 80, 16, 320, 8, 12, 4, gate_criteria(0.8), 0, train_arms=True, until=0.8)
    bf16, fp32 = expected_seconds(plan, Pace(10.0, 10.0)), expected_seconds(plan, Pace(7.4, 10.0))
    for phase in ("gate on SFT (pytest)", FRESH):
        assert fp32[phase] == bf16[phase]
    assert fp32[ARMS] < bf16[ARMS]
    assert sft_seconds(plan, Pace(7.4, 10.0), stop=40) == pytest.approx(40 * 7.4 + CHECK_STEPS * 10 + 20)


def test_the_plan_moves_work_between_phases_and_keeps_its_total():
    from training.demo_clock import Clock

    clock = Clock(say=lambda _: None)
    clock.plan({"arms": 200.0, "fresh": 300.0})
    clock.scale("arms", 0.5)
    clock.shift("fresh", "arms", 1 / 3)
    assert clock.phases["arms"].expected_s == pytest.approx(200.0)
    assert clock.phases["fresh"].expected_s == pytest.approx(200.0)


@pytest.mark.parametrize("others, shared", [(0.05, False), (0.5, True)])
def test_the_run_says_it_shared_the_machine_only_when_other_processes_took_cpu(monkeypatch, others, shared):
    """A run that used few of the CPUs alone (generation at small batches, one pytest process) is not a shared
    machine: what others ran is read from the machine's own count, not guessed from this run's share."""
    from training import demo_clock

    monkeypatch.setattr(demo_clock.time, "perf_counter", lambda: 200.0)  # 100 s of wall time since the start
    monkeypatch.setattr(demo_clock.os, "cpu_count", lambda: 2)  # 200 CPU seconds in all
    monkeypatch.setattr(demo_clock, "_cpu_seconds", lambda: 60.0)  # this run: 60 CPU seconds, 30% of the CPUs
    monkeypatch.setattr(demo_clock, "machine_busy_seconds", lambda: 1000.0 + 60.0 + others * 200)
    clock = demo_clock.Clock(say=lambda _: None, started=100.0, cpu_started=0.0, machine_started=1000.0)
    report = clock.report()
    assert f"this run used 30% of the CPUs, other processes {round(others * 100)}%" in report
    assert ("the run shared the machine" in report) is shared


def test_the_machine_line_says_when_the_instruction_sets_are_limited(monkeypatch):
    """A run with oneDNN or MKL kept to an older instruction set (to time a CPU without AMX) says so beside the CPU's
    name: its figures are not this CPU's."""
    from training import demo_clock

    for name in demo_clock.ISA_LIMITS:
        monkeypatch.delenv(name, raising=False)
    clock = demo_clock.Clock(say=lambda _: None)
    assert "instruction sets limited" not in clock.report()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    limited = "(instruction sets limited: ONEDNN_MAX_CPU_ISA=AVX2, ATEN_CPU_CAPABILITY=avx2), "
    assert f"machine: {demo_clock.cpu_name()} {limited}" in clock.report()


def test_a_rerun_reuses_a_finished_training_and_replaces_a_stale_one(tiny_base, tmp_path):
    import os

    from training.config import SFTConfig
    from training.demo_loop import _fit
    from training.runs import META_FILE

    said: list[str] = []
    cfg = lambda: SFTConfig(out=str(tmp_path / "sft"), base=str(tiny_base), steps=1, batch_size=2, episodes=2,
                            task_families=list(FAMILIES), threads=1, save_every=0)  # fmt: skip
    meta = _fit(cfg(), "SFT", said.append, retrain=False) / META_FILE
    first = meta.stat().st_mtime_ns
    assert _fit(cfg(), "SFT", said.append, retrain=False) / META_FILE == meta
    assert meta.stat().st_mtime_ns == first and "reusing" in said[-1]  # nothing trained again

    later = tmp_path / "rows.jsonl"  # what the run starts from, written after it finished
    later.write_text("")
    os.utime(later, ns=(first + 10**9, first + 10**9))
    _fit(cfg(), "SFT", said.append, retrain=False, after=later)
    assert meta.stat().st_mtime_ns > first, "a run older than what it starts from was reused"
    again = meta.stat().st_mtime_ns
    _fit(cfg(), "SFT", said.append, retrain=True)
    assert meta.stat().st_mtime_ns > again, "--retrain reused the finished run"


@pytest.mark.slow
def test_the_loop_gates_every_agent_on_the_fresh_sample_and_a_rerun_runs_nothing_again(tiny_base, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from pytest_openagent.cli import main

    folder, table = tmp_path / "loop", tmp_path / "run.json"
    argv = [
        "demo", "--base", str(tiny_base), "--dir", str(folder), "--loop-steps", "2", "--more-steps", "2",
        "--loop-episodes", "8", "--gate-n", "2", "--examples", "1", "--batch-size", "2", "--json", str(table),
    ]  # fmt: skip
    assert main(argv) == 0
    first = capsys.readouterr()
    labels = ["SFT-2", "SFT-continued", "PAFT", "oracle", "static"]
    assert list(json.loads(table.read_text())["rows"]) == labels
    reports = {label: folder / "reports" / f"{label.lower()}-seed1.json" for label in labels}
    assert all(report.is_file() for report in reports.values())
    assert "what this run showed: " in first.out
    if "PAFT and SFT-continued train side by side" in first.err:  # then SFT-2's session ran in the arms' phase
        assert "SFT-2's gate session on the fresh sample (seed 1) runs once SFT-continued has trained" in first.err
        assert "SFT-2: its gate session on seed 1 has run already" in first.err
        assert "  | SFT-2 | openagent gate " in first.out  # its lines as the fresh phase shows its sessions'
        assert reports["SFT-2"].stat().st_mtime < reports["PAFT"].stat().st_mtime

    assert main(argv) == 0
    second = capsys.readouterr()
    assert "openagent train:" not in second.err and "$ pytest" not in second.err
    assert all(f"{label}: its gate session on seed 1 has run already" in second.err for label in labels)

    for label in ("PAFT", "SFT-continued"):  # a run cut short in its fresh sessions
        reports[label].unlink()
    assert main(argv) == 0
    third = capsys.readouterr()
    assert all(report.is_file() for report in reports.values())
    assert "the sessions on PAFT, SFT-continued run " in third.err
    assert "not known" not in third.err  # the memory a session needs, read from the reports of the earlier run


def test_the_demo_says_what_its_families_tasks_are_like():
    from sandbox.domains import get_domain
    from training.demo import LOOP_FAMILIES, QUICK_FAMILIES
    from training.demo_run import _family_traits

    assert _family_traits(QUICK_FAMILIES).startswith("1 call each: short episodes")
    assert _family_traits(LOOP_FAMILIES).startswith("1 or 2 calls each, one to refuse: short episodes")
    every = _family_traits(tuple(f.name for f in get_domain("poi").families))
    assert "short episodes" not in every and "to refuse" in every


def test_the_suite_searches_every_task_of_families_with_fewer_than_it_draws(tmp_path):
    import runpy

    from sandbox.evaluation.draw import task_pool
    from training import demo_gate
    from training.demo import QUICK_FAMILIES
    from training.demo_loop import gate_criteria

    pool = task_pool(("poi",), "test", list(QUICK_FAMILIES))
    assert len(pool) < demo_gate.SEARCHED_TASKS  # else this tests nothing
    suite = demo_gate.write_suite(tmp_path, QUICK_FAMILIES, gate_criteria(0.8), n=4, examples=2)
    assert sorted(runpy.run_path(str(suite))["TASKS"]) == sorted(t.id for t in pool)


def test_a_gate_session_pytest_could_not_run_stops_the_loop(tiny_base, tmp_path, monkeypatch):
    """A suite that fails to import runs no property test: the loop must not go on as if they had passed."""
    from pytest_openagent.cli import main
    from training import demo_gate

    monkeypatch.setattr(demo_gate, "run_sessions", lambda folder, sessions, *args, **kwargs: [2] * len(sessions))
    argv = ["demo", "--base", str(tiny_base), "--dir", str(tmp_path), "--loop-steps", "1", "--loop-episodes", "2",
            "--gate-n", "1", "--examples", "1", "--batch-size", "2"]  # fmt: skip
    with pytest.raises(RuntimeError, match=r"the pytest session on SFT-1 exited 2: interrupted, as when a test module"):
        main(argv)
