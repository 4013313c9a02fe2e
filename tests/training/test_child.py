"""A training run in a child process: its output relayed as it comes, the precision this process measured
given to it, and a failure raised."""

from __future__ import annotations

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

    def quiet(seconds: float) -> None:  # the child goes on only once the parent has said it is quiet
        assert lines == ["first"] and seconds > 0
        go.touch()

    assert child.relay(["-c", script], lines.append, quiet) == 3
    assert lines == ["first", "second"]


def test_a_training_in_a_child_takes_the_precision_measured_here_and_finishes(tiny_base, tmp_path, monkeypatch, capsys):
    from training import precision
    from training.config import SFTConfig
    from training.loop import load_model
    from training.runs import finished_run

    if not precision.cpu_computes_bf16():
        pytest.skip("this CPU has no bf16 instructions: a run chooses fp32 without timing")
    cfg = SFTConfig(out=str(tmp_path / "sft"), base=str(tiny_base), steps=1, batch_size=1, episodes=1, threads=1,
                    save_every=0, task_families=["phone"])  # fmt: skip
    monkeypatch.setattr(precision, "_measured", {})
    monkeypatch.setattr(precision, "pass_seconds", lambda model: (1.0, 0.1))  # no real pass is 10× as fast in bf16
    precision.timings(load_model(cfg, Path(cfg.base))[0])

    out = child.train(cfg, "SFT", lambda message: None)
    err = capsys.readouterr().err
    assert "10.00× as fast in bf16" in err and "timing a training pass" not in err, err
    assert finished_run(out, cfg.to_dict())


def test_a_training_that_fails_in_its_child_raises(tiny_base, tmp_path, capsys):
    from training.config import SFTConfig

    cfg = SFTConfig(out=str(tmp_path / "sft"), base=str(tmp_path / "no-such-model"), steps=1, threads=1)
    with pytest.raises(RuntimeError, match="SFT: the training process exited 1"):
        child.train(cfg, "SFT", lambda message: None)
    assert "no-such-model" in capsys.readouterr().err
