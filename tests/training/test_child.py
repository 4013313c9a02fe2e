"""Training runs in child processes: their output relayed as it comes, side by side where the machine has room,
the precision this process measured given to them, a failure raised, and a child that ends with its parent."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from training import child


def test_relay_gives_each_line_as_it_comes_and_says_when_the_child_is_quiet(tmp_path, monkeypatch):
    go = tmp_path / "go"
    script = (
        "import pathlib, time\n"
        "print('first')\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        "print('second')\n"
        "raise SystemExit(3)\n"
    )
    monkeypatch.setattr(child, "HEARTBEAT", 0.05)
    lines: list[str] = []

    def quiet(seconds: float) -> None:  # the child goes on only once the parent has said it is quiet after "first"
        assert seconds > 0 and lines in ([], ["first"])  # a slow start is quiet too, before any line
        if lines == ["first"]:
            go.touch()

    assert child.relay_all([[child.Command("", ["-c", script])]], lambda _, text: lines.append(text), quiet) == [[3]]
    assert lines == ["first", "second"]


def test_relay_all_runs_its_chains_at_once_each_ones_commands_in_turn_and_labels_their_lines(tmp_path):
    from training.child import Command

    both = "import sys; print(sys.argv[1], flush=True); sys.exit(int(sys.argv[1]))"
    wait = (f"import pathlib, time\nwhile not pathlib.Path({str(tmp_path / 'go')!r}).exists(): time.sleep(0.01)\n"
            "print('after', flush=True)")  # fmt: skip
    touch = f"import pathlib; pathlib.Path({str(tmp_path / 'go')!r}).touch(); print('touched', flush=True)"
    lines: list[tuple[str, str]] = []
    codes = child.relay_all(
        [[Command("a", ["-c", wait]), Command("b", ["-c", both, "4"])], [Command("c", ["-c", touch])]],
        lambda label, text: lines.append((label, text)),
        print,
    )  # the first chain waits on the second: they run at once
    assert codes == [[0, 4], [0]]
    assert sorted(lines) == [("a", "after"), ("b", "4"), ("c", "touched")]
    assert lines.index(("a", "after")) < lines.index(("b", "4"))


def test_relay_all_adds_each_commands_environment_to_its_child():
    from training.child import Command

    show = "import os; print(os.environ.get('SIZE', '-'), flush=True)"
    lines: list[str] = []
    codes = child.relay_all([[Command("", ["-c", show], env={"SIZE": "1"}), Command("", ["-c", show])]],
                            lambda _, text: lines.append(text), print)  # fmt: skip
    assert codes == [[0, 0]] and lines == ["1", "-"]


def test_a_child_ends_when_its_parent_is_killed(tmp_path):
    import psutil

    parent = (
        "import sys; from training import child\n"
        "sleep = child.Command('', ['-c', 'import os, time; print(os.getpid(), flush=True); time.sleep(600)'])\n"
        "child.relay_all([[sleep]], lambda _, line: print(line, flush=True), lambda s: None)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    pid = int(process.stdout.readline())  # the child runs: it printed its pid
    process.kill()
    process.wait()
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=60)  # ends at once; the bound only keeps a failure from hanging
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize(
    ("cpus", "available", "peak", "threads"),
    [(2, 10, 3, 1), (4, 10, 3, 2), (2, 7, 3, 0), (1, 10, 3, 0), (2, 10, None, 0), (2, None, 3, 0)],
)
def test_runs_train_side_by_side_only_with_a_cpu_each_and_the_memory_for_both(monkeypatch, cpus, available, peak,
                                                                              threads):  # fmt: skip
    from training import cpu, memory

    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gib = lambda n: None if n is None else n * 2**30
    monkeypatch.setattr(cpu, "available_cpus", lambda: cpus)
    monkeypatch.setattr(memory, "available_bytes", lambda: gib(available))
    assert child.side_by_side(2, gib(peak))[0] == threads
    assert child.side_by_side(1, gib(peak))[0] == 0


@pytest.mark.parametrize(("cpus", "threads"), [(1, 0), (2, 1), (4, 1), (6, 2)])
def test_sessions_that_share_the_cpus_go_side_by_side_with_two_cpus_or_more(monkeypatch, cpus, threads):
    from training import cpu, memory

    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(cpu, "available_cpus", lambda: cpus)
    monkeypatch.setattr(memory, "available_bytes", lambda: 20 * 2**30)
    assert child.side_by_side(3, 2**30, share_cpus=True)[0] == threads
    assert child.side_by_side(3, 2**30)[0] == (cpus // 3 if cpus >= 3 else 0)
    assert child.side_by_side(3, 6 * 2**30, share_cpus=True)[0] == 0  # 3 × 6 GiB × 1.25 > 20 GiB


def test_runs_on_a_gpu_train_one_after_the_other(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert child.side_by_side(2, 2**30) == (0, "they run on the GPU")


def test_the_memory_this_machine_reports():
    from training import memory

    assert memory.peak_rss_bytes() > 2**20
    available = memory.available_bytes()
    assert available is None if not memory.MEMINFO.exists() else available > 0


def test_trainings_side_by_side_take_the_precision_measured_here_and_finish(tiny_base, tmp_path, monkeypatch, capsys):
    from training import precision
    from training.config import SFTConfig
    from training.loop import load_model
    from training.runs import finished_run, read_meta

    if not precision.cpu_computes_bf16():
        pytest.skip("this CPU has no bf16 instructions: a run chooses fp32 without timing")
    cfg = lambda name: SFTConfig(out=str(tmp_path / name), base=str(tiny_base), steps=1, batch_size=1, episodes=1,
                                 threads=1, save_every=0, task_families=["phone"])  # fmt: skip
    monkeypatch.setattr(precision, "_measured", {})
    monkeypatch.setattr(precision, "pass_seconds", lambda model: (1.0, 0.1))  # no real pass is 10× as fast in bf16
    precision.timings(load_model(cfg("a"), Path(tiny_base))[0])

    runs = [("A", cfg("a")), ("B", cfg("b"))]
    outs = child.train(runs, lambda message: None)
    err = capsys.readouterr().err
    for (label, run), out in zip(runs, outs, strict=True):
        assert f"{label} | openagent train: precision bf16 autocast: a training pass measured 10.00× as fast" in err
        assert finished_run(out, run.to_dict()) and read_meta(out)["peak_rss_bytes"] > 2**20
    assert "timing a training pass" not in err, err


def test_an_rl_run_trains_in_its_child(tiny, tmp_path, capsys):
    from training.config import RLConfig
    from training.runs import finished_run, read_meta

    cfg = RLConfig(out=str(tmp_path / "rl"), init=str(tiny), steps=1, group=2, tasks_per_step=1, tasks=1,
                   max_new_tokens=8, threads=1, reward="refusal-aware")  # fmt: skip
    (out,) = child.train([("RL", cfg)], lambda message: None)
    meta = read_meta(out)
    assert finished_run(out, cfg.to_dict()) and meta["kind"] == "rl" and meta["reward"] == "refusal-aware"
    assert meta["peak_rss_bytes"] > 2**20  # measured in the child
    assert "openagent train: rl: step 1/1, reward" in capsys.readouterr().err  # its progress, relayed


def test_a_training_that_fails_in_its_child_raises(tiny_base, tmp_path, capsys):
    from training.config import SFTConfig

    cfg = SFTConfig(out=str(tmp_path / "sft"), base=str(tmp_path / "no-such-model"), steps=1, threads=1)
    with pytest.raises(RuntimeError, match="the training process of SFT exited 1"):
        child.train([("SFT", cfg)], lambda message: None)
    assert "no-such-model" in capsys.readouterr().err
