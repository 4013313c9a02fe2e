"""An output that cannot be written is misuse said before any work, in every command that writes one (issue #45)."""

from __future__ import annotations

import pytest

from pytest_openagent.cli import main

LONG = "r" * 250 + ".json"


def _bad_outputs(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return {
        "proc": "/proc/openagent-report.json",  # a folder no file can be made in, even by root
        "long": str(tmp_path / LONG),
        "under a file": str(blocker / "sub" / "r.json"),
    }


COMMANDS = {
    "eval --json": ["eval", "--agent", "oracle", "--n", "1", "--no-cache", "--json", "{}"],
    "eval --html": ["eval", "--agent", "oracle", "--n", "1", "--no-cache", "--html", "{}"],
    "check-domain --json": ["check-domain", "poi", "--no-cache", "--json", "{}"],
    "data export": ["data", "export", "sft", "--out", "{}"],
    "train --out": ["train", "sft", "--out", "{}", "--steps", "1"],
}


@pytest.mark.parametrize("where", ["proc", "long", "under a file"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_output_that_cannot_be_written_exits_2_before_any_work(command, where, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _bad_outputs(tmp_path)[where]
    argv = [a.replace("{}", path) for a in COMMANDS[command]]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "cannot write" in err or "is a file" in err or "cannot make" in err, err
    assert "Traceback" not in err and not (tmp_path / ".openagent_cache").exists(), "nothing ran"
