"""The openagent command: the table, the JSON report, the gate's exit codes, and its misuse."""

import json
import os
import stat
import subprocess
import sys
from fnmatch import fnmatch

import pytest

from pytest_openagent.cli import main
from tests.processes import communicate, run


@pytest.mark.usefixtures("toy_perturbations")
def test_the_command_prints_the_table_writes_json_and_gates(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["eval", "--agent", "oracle", "--names", "toy_shout,toy_pad", "--n", "4", "--cache-dir", str(tmp_path)]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "perception" in printed and "Δ points" in printed and json.loads(out.read_text())["schema_version"] == 4
    assert main(argv) == 0
    assert "; 0 episodes run, " in capsys.readouterr().out  # the second run is served from the cache
    assert main([*argv[:-2], "--no-cache"]) == 0
    assert "shared by identical cases" in capsys.readouterr().out  # no cache: say what the reuse is
    assert main(["gate", str(out), "--gate", "perception.success>=0.5"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99"]) == 3  # 4 cases: inconclusive
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "pass"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "fail"]) == 1
    assert main(["gate", str(out), "--gate", "perception.episodes>=99"]) == 1
    assert "FAIL         perception.episodes>=99: measured 4 (n=4)" in capsys.readouterr().out
    assert main(["gate", str(out), "--baseline", str(out), "--max-regression", "100"]) == 0
    page = tmp_path / "gate.html"
    gate = ["--gate", "perception.episodes>=99", "--html", str(page)]
    assert main(["gate", str(out), "--baseline", str(out), *gate]) == 1
    assert f"HTML report written to {page}" in capsys.readouterr().out
    text = page.read_text()  # clean, the two tiers and all, side by side with the baseline
    assert 'id="gate"' in text and 'id="baseline"' in text and text.count('data-metric="baseline_success"') == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval"], "the following arguments are required: --agent"),
        (["eval", "--agent", "oracel"], "Did you mean 'oracle'?"),
        (["gate", "nothing.json", "--gate", "all.success>=1"], "cannot read report 'nothing.json'"),
        (["gate", "r.json"], "give --gate CRITERIA, --baseline REPORT, or both"),
        (["gate", "r.json", "--baseline", "r.json", "--max-regression", "nan"], "the margin must be a number"),
        (["gate", "r.json", "--baseline", "r.json", "--max-regression", "-3"], "from 0 to 100"),
    ],
)
def test_command_misuse_exits_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_importing_the_plugin_loads_no_torch():
    code = "import sys, pytest_openagent, pytest_openagent.plugin, pytest_openagent.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_dead_agent_exits_4_naming_the_cause_not_a_table_of_zeros(capsys):
    assert main(["eval", "--agent", "tests.toys:Dead", "--tiers", "1", "--n", "8", "--no-cache"]) == 4
    captured = capsys.readouterr()
    assert "no measurement: the agent failed on 16 of 16 episodes" in captured.err and "Δ points" not in captured.out


def test_a_dead_agent_is_broken_at_any_n(capsys):
    # 1 case and its clean twin, both ended by the same agent error: no table of 0.0%, whatever n is
    assert main(["eval", "--agent", "tests.toys:Dead", "--tiers", "1", "--n", "1", "--no-cache"]) == 4
    assert "no measurement: the agent failed on 2 of 2 episodes" in capsys.readouterr().err


def _openagent(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    code = "import sys; from pytest_openagent.cli import main; sys.exit(main(sys.argv[1:]))"
    return run([sys.executable, "-c", code, *argv], cwd=cwd)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tiers", ","], "openagent eval: error: --tiers ',': no tier given; use a name (perception, *"),
        (["--batch-size", "0"], "openagent eval: error: argument --batch-size: must be at least 1, got 0"),
        (["--seed", "-1"], "openagent eval: error: argument --seed: must be at least 0, got -1"),
        (["--n", "2.5"], "openagent eval: error: argument --n: '2.5' is not a whole number"),
        (["--json", "."], "openagent eval: error: '.' is a folder; give the file to write the report to, *"),
        (["--html", "."], "openagent eval: error: '.' is a folder; give the file to write the HTML report to, *"),
        (["--plot", "."], "openagent eval: error: '.' is a folder; give the file to write the figure to, *"),
        (["--agent", "my_agent:nope"], "openagent eval: error: agent 'my_agent:nope': module 'my_agent' has no *"),
    ],
)
def test_eval_checks_every_input_before_it_runs(tmp_path, argv, message):
    (tmp_path / "my_agent.py").write_text("class Agent:\n    def act(self, turns):\n        return []\n")
    args = ["eval", "--agent", "oracle", "--tiers", "1", "--n", "1", "--no-cache", *argv]
    result = _openagent(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert fnmatch(result.stderr.strip().splitlines()[-1], message), result.stderr


@pytest.mark.usefixtures("toy_perturbations")
def test_eval_writes_the_html_page_and_the_sensitivity_figure_and_prints_the_curves(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    page, png, base = tmp_path / "r.html", tmp_path / "figures" / "curves.png", tmp_path / "oracle.json"
    argv = ["eval", "--names", "toy_shout", "--n", "12", "--no-cache"]
    assert main([*argv, "--agent", "oracle", "--json", str(base)]) == 0
    capsys.readouterr()
    argv += ["--agent", "tests.toys:Fragile", "--baseline", str(base)]
    assert main([*argv, "--html", str(page), "--plot", str(png), "--gate", "perception.success>=0.99"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL         baseline perception: success " in printed
    assert "success against severity (s=0: the same tasks clean)" in printed
    assert f"HTML report written to {page}" in printed and f"sensitivity figure written to {png}" in printed
    text = page.read_text()
    assert 'data-verdict="FAIL"' in text and "perception.success&gt;=0.99" in text and 'id="sensitivity"' in text
    assert "baseline perception" in text and 'data-scope="perception" data-metric="baseline_success"' in text
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_plot_without_matplotlib_is_misuse_before_any_episode(monkeypatch, capsys):
    from sandbox import errors

    real = errors.importlib.util.find_spec
    monkeypatch.setattr(errors.importlib.util, "find_spec", lambda name: None if name == "matplotlib" else real(name))
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--agent", "tests.toys:Dead", "--tiers", "1", "--n", "1", "--no-cache", "--plot", "x.png"])
    assert exit_info.value.code == 2
    assert "needs the `plot` extra (matplotlib not installed); install it: pip install " in capsys.readouterr().err


def test_data_export_refuses_zero_episodes(tmp_path):
    result = _openagent("data", "export", "sft", "--out", str(tmp_path / "d.jsonl"), "--episodes", "0")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "openagent data: error: --episodes must be at least 1 (the training tasks to export), got 0"
    )
    assert not (tmp_path / "d.jsonl").exists()


def test_a_model_agent_without_the_train_extra_names_the_install_line(monkeypatch, capsys):
    from training import agent_kind

    monkeypatch.setattr(agent_kind, "TRAIN_MODULES", ("openagent_absent_torch",))
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--agent", "hf:runs/sft", "--tiers", "1", "--n", "1"])
    assert exit_info.value.code == 2
    assert "needs the `train` extra (openagent_absent_torch not installed); install it: pip install " in (
        capsys.readouterr().err
    )


def _commands(parser, prefix=()):
    """Every command path of the parser, subcommands included: ('eval',), ('train', 'sft'), ..."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _commands(sub, (*prefix, name))


def test_every_command_has_a_working_help(capsys):
    from pytest_openagent.cli import build_parser

    commands = list(_commands(build_parser()))
    assert {("eval",), ("train", "sft"), ("train", "rl"), ("data", "export", "paft"), ("demo",)} <= set(commands)
    for command in [(), *commands]:
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--help"])
        assert exit_info.value.code == 0, command
        assert capsys.readouterr().out.startswith(f"usage: openagent {' '.join(command)}".rstrip())
    result = _openagent("--help")
    assert result.returncode == 0 and "eval" in result.stdout and "mcp-proxy" in result.stdout


EVAL = ["eval", "--agent", "oracle", "--tiers", "perception", "--n", "2"]


def test_a_closed_stdout_does_not_lose_the_report(tmp_path):
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "pytest_openagent.cli", *EVAL, "--no-cache", "--json", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env=env)  # fmt: skip
    process.stdout.close()  # the reader is gone before the first line, as `| head -1` is soon after it
    _, err = communicate(process)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert process.returncode == 0 and len(json.loads(out.read_text())["records"]) > 0


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_reports_and_exported_jsonl_get_the_umasks_mode(tmp_path, umask, mode, capsys):
    from training.export import write_jsonl

    previous = os.umask(umask)
    try:
        assert main([*EVAL, "--no-cache", "--json", str(tmp_path / "r.json")]) == 0
        write_jsonl([{"messages": []}], tmp_path / "rows.jsonl")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "rows.jsonl").stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "rows.jsonl"], "no temporary file is left"


def test_an_unusable_cache_folder_is_misuse_before_the_run(tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    inside = tmp_path / "cache"
    (inside / "episodes").parent.mkdir()
    (inside / "episodes").write_text("a file where the episodes go")
    for folder, where in ((blocked, blocked), (blocked / "sub", blocked), (inside, inside / "episodes")):
        with pytest.raises(SystemExit) as exited:
            main([*EVAL, "--cache-dir", str(folder)])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert f"--cache-dir: the cache folder {folder} cannot be used: {where} is a file, not a folder" in err
        assert "--no-cache" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_cache_folder_without_write_permission_is_misuse(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(SystemExit) as exited:
            main([*EVAL, "--cache-dir", str(locked)])
    finally:
        locked.chmod(0o700)
    assert exited.value.code == 2 and "is not writable by this user" in capsys.readouterr().err


def test_a_state_factory_that_raises_everywhere_is_no_measurement_naming_the_domain(tmp_path, monkeypatch, capsys):
    (tmp_path / "brokenworld.py").write_text(
        "import sandbox\n"
        "def lookup(state, key: str) -> str:\n"
        "    '''Look a key up.'''\n"
        "    return state[key]\n"
        "def factory(seed):\n"
        "    raise RuntimeError('the database is down')\n"
        "DOMAIN = sandbox.define_domain('brokenworld', [lookup], state=factory,\n"
        "    tasks=[sandbox.UserTask(f'What is {k}?', answer={'v': '1'}, id=k) for k in 'abcdefgh'])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code = main(["eval", "--agent", "oracle", "--domain", "brokenworld:DOMAIN", "--n", "8", "--no-cache"])
    finally:
        from sandbox.domains import DOMAINS

        DOMAINS.pop("brokenworld", None)
    err = capsys.readouterr().err
    assert code == 4 and "the state factory of domain 'brokenworld' failed for seed 0" in err
    assert "RuntimeError: the database is down; fix the domain" in err
