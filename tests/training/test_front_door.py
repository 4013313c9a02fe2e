"""What a new user meets first: a missing extra or checkpoint is one line that says what to install or give
(issue #45)."""

from __future__ import annotations

import importlib.util

import pytest

from pytest_openagent.cli import main

pytest_plugins = ["pytester"]


@pytest.fixture
def without_torch(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name.partition(".")[0] == "torch" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    "argv", [["train", "sft", "--out", "{out}"], ["demo"], ["base"], ["gguf", "default", "{out}.gguf"]]
)
def test_a_training_command_without_the_train_extra_is_one_line(argv, without_torch, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([a.replace("{out}", str(tmp_path / "run")) for a in argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "needs the `train` extra (torch not installed)" in err and "pip install 'pytest-openagent[train]'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()[-1]) < 400


def test_pytest_with_an_hf_agent_that_is_not_there_is_a_usage_error(pytester):
    pytester.makepyfile(test_a="def test_a(agent):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--openagent-agent", "hf:runs/sft")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*hf:runs/sft: no such directory*"])
    assert len(result.stderr.lines) <= 3, result.stderr.str()


def test_openagent_eval_says_its_progress_on_stderr(capsys):
    assert main(["eval", "--agent", "oracle", "--n", "1", "--tiers", "perception", "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "openagent eval: 1 of " in captured.err and " episodes in " in captured.err
    assert "episodes in" not in captured.out, "stdout keeps the table alone"
