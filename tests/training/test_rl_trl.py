"""``openagent train rl --engine trl``: the same config and outputs through TRL's GRPOTrainer, resume included."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from sandbox.errors import UsageError
from training import runs
from training.rl import RLConfig, check_config, train
from training.rl_trl import RUN_FILE, _resume_from, grpo_config

ROOT = Path(__file__).resolve().parents[2]


def _cfg(tiny, out, **kw) -> RLConfig:
    defaults = dict(
        out=str(out), init=str(tiny), tasks=4, steps=2, group=2, tasks_per_step=2, max_new_tokens=6, max_turns=2,
        lr=1e-2, lora=False, warmup=1, progress=False, save_every=0, threads=1, engine="trl",
    )  # fmt: skip
    return RLConfig(**{**defaults, **kw})


def test_an_unknown_engine_and_a_supervised_term_on_trl_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="engine must be one of own, trl, got 'tlr'"):
        check_config(RLConfig(out=str(tmp_path), init="x", engine="tlr"))
    with pytest.raises(UsageError, match=r"--sft-coef 0\.5: the supervised term is our loop's"):
        train(RLConfig(out=str(tmp_path), init="x", engine="trl", sft_coef=0.5))


def test_the_cli_takes_the_engine():
    from pytest_openagent.cli import main

    done = subprocess.run([sys.executable, "-c", "from pytest_openagent.cli import main; main()", "train", "rl",
                           "--help"], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert "--engine" in done.stdout and "trl" in done.stdout
    with pytest.raises(SystemExit) as stop:
        main(["train", "rl", "--init", "x", "--out", "y", "--engine", "tlr"])
    assert stop.value.code == 2


def test_the_options_map_onto_trls():
    args = grpo_config(RLConfig(out="o", init="x", group=4, tasks_per_step=3, iterations=2, kl=0.1, clip=0.3,
                                loss_norm="sequence", steps=5, save_every=2), Path("o"))  # fmt: skip
    assert (args.num_generations, args.per_device_train_batch_size, args.max_steps) == (4, 12, 10)
    assert (args.beta, args.epsilon, args.loss_type, args.num_iterations, args.save_steps) == (0.1, 0.3, "grpo", 2, 4)


def test_a_checkpoint_of_other_options_is_refused_and_one_of_these_resumed(tmp_path):
    cfg = RLConfig(out=str(tmp_path), init="x", engine="trl")
    config = cfg.to_dict()
    point = tmp_path / runs.CHECKPOINTS / "checkpoint-4"
    point.mkdir(parents=True)
    (point / RUN_FILE).write_text(json.dumps({"config": config, "history": [{"step": 1}]}))
    assert _resume_from(tmp_path, config, cfg) == (str(point), [{"step": 1}])
    with pytest.raises(runs.CheckpointError, match="other options"):
        _resume_from(tmp_path, {**config, "lr": 1.0}, cfg)
    overwrite = RLConfig(out=str(tmp_path), init="x", engine="trl", overwrite=True)
    assert _resume_from(tmp_path, {**config, "lr": 1.0}, overwrite) == (None, [])
    assert not point.exists()


@pytest.mark.slow
def test_a_trl_run_writes_the_model_and_the_reward_curve_and_is_reused(tiny, tmp_path, capsys):
    out = train(_cfg(tiny, tmp_path / "run"))
    meta = json.loads((out / "openagent-train.json").read_text())
    assert meta["engine"] == "trl" and meta["config"]["engine"] == "trl"
    assert [r["step"] for r in meta["history"]] == [1, 2]
    assert all(len(r["rewards"]) == 4 and len(r["cases"]) == 2 for r in meta["history"])
    assert (out / "model.safetensors").is_file() and not (out / runs.CHECKPOINTS).exists()
    train(_cfg(tiny, tmp_path / "run"))
    assert "reusing it" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_trl_run_resumes_from_its_checkpoint(tiny, tmp_path):
    out = tmp_path / "run"
    options = _cfg(tiny, out, steps=4, save_every=2).to_dict()
    code = f"from training.rl import RLConfig, train; train(RLConfig(**{options!r}))"
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while not (out / runs.CHECKPOINTS / "checkpoint-2" / RUN_FILE).is_file():
            assert child.poll() is None, "the run ended before its first checkpoint"
            time.sleep(0.2)
    finally:
        child.kill()
        child.wait()
    train(RLConfig(**options))
    history = json.loads((out / "openagent-train.json").read_text())["history"]
    assert [r["step"] for r in history] == [1, 2, 3, 4]
