"""``openagent demo`` end to end at toy scale: a tiny random base, two SFT exports, the reference rows."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")


def test_demo_trains_evaluates_writes_the_table_and_figure_and_reuses_its_checkpoints(tiny_base, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from pytest_openagent.cli import main

    figure = tmp_path / "demo.png"
    argv = [
        "demo", "--table", "--base", str(tiny_base), "--dir", str(tmp_path / "demo"),
        "--agents", "sft,paft,oracle,static", "--sft-steps", "1,2", "--paft-from", "1", "--paft-steps", "1",
        "--batch-size", "2", "--episodes", "4",
        "--n", "1", "--json", str(tmp_path / "table.json"), "--figure", str(figure),
    ]  # fmt: skip

    assert main(argv) == 0
    first = capsys.readouterr()
    assert "sft: training 2 steps" in first.err and "paft: training 1 steps" in first.err
    paft = "PAFT-1 (α=0.5, error_feedback, from SFT-1)"
    for row in ("SFT-1", "SFT-2", paft, "oracle", "static"):
        assert row in first.out
    # PAFT continued from SFT-1 for one step has SFT-2's compute: the two are compared case by case.
    assert f"{paft} minus SFT-2, paired on the same cases" in first.out
    table = json.loads((tmp_path / "table.json").read_text())
    assert list(table["rows"]) == ["SFT-1", "SFT-2", paft, "oracle", "static"]
    assert table["rows"]["oracle"]["clean"] == 1.0 and table["rows"]["oracle"]["success_perception"] == 1.0
    assert json.loads((tmp_path / "demo" / "paft" / "openagent-train.json").read_text())["config"]["base"].endswith(
        "step-1"
    )
    assert (tmp_path / "demo" / "sft" / "step-1" / "model.safetensors").is_file()
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert main(argv) == 0  # the second run trains nothing
    second = capsys.readouterr()
    assert "reusing" in second.err and "training" not in second.err
    assert json.loads((tmp_path / "table.json").read_text())["rows"] == table["rows"]


def test_demo_on_named_task_families_trains_and_evaluates_on_them_only(tiny_base, tmp_path, capsys):
    from pytest_openagent.cli import main

    argv = [
        "demo", "--table", "--base", str(tiny_base), "--dir", str(tmp_path / "demo"), "--agents", "sft,oracle",
        "--sft-steps", "1", "--batch-size", "2", "--episodes", "4", "--n", "2", "--task-families",
        "phone,unknown_place", "--json", str(tmp_path / "table.json"), "--figure", str(tmp_path / "demo.png"),
    ]  # fmt: skip
    assert main(argv) == 0
    assert "task families: phone, unknown_place (training and evaluation)" in capsys.readouterr().out
    table = json.loads((tmp_path / "table.json").read_text())
    for report in table["reports"].values():
        assert report["meta"]["families"] == ["phone", "unknown_place"]
        assert {r["family"] for r in report["records"]} == {"phone", "unknown_place"}
    data = json.loads((tmp_path / "demo" / "sft" / "openagent-train.json").read_text())["data"]
    assert data["task_families"] == ["phone", "unknown_place"] and data["tasks"] == 4

    with pytest.raises(SystemExit) as exited:
        main([*argv[:-4], "--dir", str(tmp_path / "typo"), "--task-families", "phnoe"])
    assert exited.value.code == 2 and "Did you mean 'phone'" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()  # stopped before it trained


def test_paft_is_compared_with_sft_continued_as_long_from_the_same_checkpoint(tiny_base, tmp_path, capsys,
                                                                             monkeypatch):  # fmt: skip
    from pytest_openagent.cli import main
    from training import child

    monkeypatch.setattr(child, "side_by_side", lambda runs, peak: (1, f"{runs} runs, a peak of {peak} bytes"))

    argv = [
        "demo", "--table", "--base", str(tiny_base), "--dir", str(tmp_path / "demo"), "--agents", "sft,paft",
        "--sft-steps", "1", "--paft-from", "1", "--paft-steps", "1", "--continued", "--batch-size", "2",
        "--episodes", "4", "--n", "1", "--figure", str(tmp_path / "demo.png"),
    ]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert re.search(r"paft and continued train side by side, 1 CPU thread each \(2 runs, a peak of \d+ bytes\)", err)
    assert re.search(r"peak memory: \d+\.\d GiB \(this process or its largest child, in this run\)", err)
    paft, continued = "PAFT-1 (α=0.5, error_feedback, from SFT-1)", "SFT continued 1 (from SFT-1)"
    assert continued in out and f"{paft} minus {continued}, paired on the same cases" in out
    run = json.loads((tmp_path / "demo" / "sft-continued" / "openagent-train.json").read_text())["config"]
    paft_run = json.loads((tmp_path / "demo" / "paft" / "openagent-train.json").read_text())["config"]
    assert run["base"] == paft_run["base"] and run["steps"] == paft_run["steps"] and run["alpha"] == 0.0
    assert run["threads"] == paft_run["threads"] == 1


def test_paft_must_start_from_an_sft_row_and_name_known_families_and_full_adds_the_rl_rows():
    from dataclasses import replace

    from sandbox.errors import UsageError
    from training.demo import DemoConfig, checked

    cfg = DemoConfig(table=True, sft_steps=[20, 40], paft_from=20, paft_steps=20)
    assert {"base", "rl"}.isdisjoint(checked(cfg).agents)
    assert checked(replace(cfg, full=True)).agents == ["base", "sft", "paft", "oracle", "static", "rl"]
    with pytest.raises(UsageError, match=r"--paft-from 30 is not one of --sft-steps \[20, 40\]"):
        checked(replace(cfg, paft_from=30))
    checked(replace(cfg, paft_from=0))  # from the base
    with pytest.raises(UsageError, match=r"--continued continues an SFT export"):
        checked(replace(cfg, paft_from=0, continued=True))
    with pytest.raises(UsageError, match=r"unknown PAFT families \['errors'\]; expected some of"):
        checked(replace(cfg, paft_families=["errors"]))


def test_quick_scales_everything_down_and_leaves_out_the_slow_rows():
    from training.demo import LOOP_FAMILIES, QUICK_FAMILIES, DemoConfig

    quick = DemoConfig(quick=True, table=True).scaled()
    assert (quick.sft_steps, quick.paft_steps, quick.n, quick.rl_steps, quick.episodes) == ([15], 0, 4, 0, 120)
    assert quick.task_families == list(LOOP_FAMILIES)
    assert DemoConfig(quick=True, table=True, task_families=["phone"]).scaled().task_families == ["phone"]
    assert {"base", "paft", "rl"}.isdisjoint(quick.agents) and "sft" in quick.agents
    assert DemoConfig(table=True).scaled() == DemoConfig(table=True)
    loop = DemoConfig(quick=True).scaled()  # the loop's first half on one-call families: a shorter SFT, a smaller gate
    assert (loop.loop_steps, loop.loop_episodes, loop.gate_n, loop.examples) == (12, 96, 4, 2)
    assert loop.task_families == list(QUICK_FAMILIES) and set(QUICK_FAMILIES) < set(LOOP_FAMILIES)
    assert DemoConfig().scaled().task_families == list(LOOP_FAMILIES)
    paper = DemoConfig(paper=True).scaled()
    assert paper.table and paper.full and paper.sft_steps == [50, 100] and paper.paft_from == 100
    assert paper.continued and paper.rl_sft_coef == 0.0  # PAFT against its compute; GRPO alone, as the paper's RL


def test_paper_trains_sft_paft_sft_continued_and_rl_with_its_settings(tmp_path, monkeypatch):
    import training.child
    import training.rl_demo
    from training.demo import DemoConfig, _train_configs, checked, train_agents

    cfg = checked(DemoConfig(paper=True, dir=str(tmp_path)))
    trained: list[str] = []
    monkeypatch.setattr(training.child, "train", lambda runs, say: trained.extend(run.out for _, run in runs))
    rl: dict = {}
    monkeypatch.setattr(
        training.rl_demo, "demo_train", lambda sft, root, settings, *_: rl.update(sft=sft, s=settings) or {}
    )
    train_agents(cfg, _train_configs(cfg, tmp_path), tmp_path)
    assert trained == [str(tmp_path / name) for name in ("sft", "paft", "sft-continued")]
    assert rl["sft"] == tmp_path / "sft" / "step-50"
    assert (rl["s"].sft_coef, rl["s"].tasks, rl["s"].perturbed, rl["s"].steps) == (0.0, 16, 0.75, 12)


def test_rl_starts_from_the_sft_checkpoint_asked_for(tmp_path):
    from dataclasses import replace

    from sandbox.errors import UsageError
    from training.config import SFTConfig
    from training.demo import DemoConfig, rl_start, sft_dir

    cfg = DemoConfig(sft_steps=[25, 50, 100], rl_from=50)
    runs = {"sft": SFTConfig(out=str(tmp_path / "sft"))}
    assert rl_start(cfg) == 50 and sft_dir(cfg, runs, 50) == tmp_path / "sft" / "step-50"
    assert rl_start(replace(cfg, rl_from=0)) == 100 and sft_dir(cfg, runs, 100) == tmp_path / "sft"
    with pytest.raises(UsageError, match=r"--rl-from 40 is not one of --sft-steps \[25, 50, 100\]"):
        rl_start(replace(cfg, rl_from=40))
    rl_start(replace(cfg, rl_from=40, rl_steps=0))  # no RL: nothing to start from, no error


def _record(case: str, task: str, tier: str, success: bool, clean_success: bool):
    from sandbox.evaluation.report import Record

    return Record(
        test="evaluate", agent="a", case=case, label=case, task=task, family="phone", n_calls=2,
        perturbations=("tool_name_noise",), tier=tier, solvable=True, outcome="success" if success else "wrong_answer",
        success=success, tool_errors=0, calls=2, clean_outcome="success", clean_success=clean_success,
        clean_solvable=True, clean_tool_errors=0, clean_calls=2,
    )  # fmt: skip


def test_paired_compares_the_same_cases_per_scope_and_counts_each_clean_twin_once():
    from sandbox.evaluation.report import Report
    from training.paired import paired

    # Agent A fixes cases 1 and 2 of tier 1 and breaks case 3; task t1 has two cases, its clean twin counts once.
    a = Report(
        [
            _record("c1", "t1", "perception", True, True),
            _record("c2", "t1", "perception", True, True),
            _record("c3", "t3", "perception", False, False),
            _record("c4", "t4", "interaction", True, True),
        ],
        {},
    )
    b = Report(
        [
            _record("c1", "t1", "perception", False, True),
            _record("c2", "t1", "perception", False, True),
            _record("c3", "t3", "perception", True, True),
            _record("c4", "t4", "interaction", True, True),
        ],
        {},
    )
    deltas = paired(a, b)  # fmt: skip
    tier1 = deltas["perception"]
    assert (tier1.both, tier1.only_a, tier1.only_b, tier1.neither) == (0, 2, 1, 0)
    clean = deltas["clean"]
    assert clean.n == 3 and (clean.only_a, clean.only_b) == (0, 1)
    assert deltas["interaction"].points == 0 and "reasoning" not in deltas and "refusal" not in deltas


def test_paired_counts_refusals_on_the_unsolvable_cases_of_tier_4_only():
    from dataclasses import replace

    from sandbox.evaluation.report import Report
    from training.paired import paired

    def tier4(case: str, outcome: str, solvable: bool = False):
        r = _record(case, case, "internalization", outcome == "refused", True)
        return replace(r, solvable=solvable, outcome=outcome)

    a = Report([tier4("u1", "refused"), tier4("u2", "refused"), tier4("s1", "success", solvable=True)], {})
    b = Report([tier4("u1", "refused"), tier4("u2", "wrong_answer"), tier4("s1", "wrong_answer", solvable=True)], {})
    deltas = paired(a, b)
    refusal = deltas["refusal"]
    assert refusal.n == 2 and (refusal.both, refusal.only_a, refusal.only_b) == (1, 1, 0)
    assert deltas["internalization"].n == 3
