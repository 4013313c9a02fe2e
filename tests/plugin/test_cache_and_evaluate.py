"""The episode cache, openagent.evaluate and the openagent command."""

import json
import subprocess
import sys

import pytest

import pytest_openagent as openagent
import sandbox
from pytest_openagent.cli import main
from sandbox.agents import OracleAgent
from sandbox.case import Case
from sandbox.evaluation.cache import EpisodeCache


class Counter(OracleAgent):
    def __init__(self):
        self.turns = 0

    def fingerprint(self):
        return "counter-v1"

    def act(self, turns):
        self.turns += len(turns)
        return super().act(turns)


def test_the_cache_reads_back_what_it_stored_and_leaves_no_temporary_file(tmp_path):
    cases = [Case(t) for t in sandbox.tasks("poi", "test", n=4)]
    agent = Counter()
    cache = EpisodeCache(tmp_path)
    first = cache.run(agent, cases)
    cache.flush()
    turns = agent.turns
    second = EpisodeCache(tmp_path).run(agent, cases)
    assert agent.turns == turns and [e.outcome for e in first] == [e.outcome for e in second]
    assert first[0].model_dump() == second[0].model_dump()
    assert not list(tmp_path.rglob(".tmp-*"))


def test_agent_errors_are_not_cached(tmp_path):
    class Broken:
        def act(self, turns):
            raise RuntimeError("server down")

    cache = EpisodeCache(tmp_path)
    [episode] = cache.run(Broken(), [Case(sandbox.tasks("poi", "test", n=1)[0])])
    cache.flush()
    assert episode.outcome == "agent_error" and not list(tmp_path.rglob("pack-*"))


def test_the_key_depends_on_agent_case_and_step_limit():
    a, b = (Case(t) for t in sandbox.tasks("poi", "test", n=2))
    keys = {EpisodeCache.key("x", a, 8), EpisodeCache.key("y", a, 8), EpisodeCache.key("x", b, 8)}
    assert len(keys | {EpisodeCache.key("x", a, 9)}) == 4


@pytest.mark.usefixtures("toy_perturbations")
def test_evaluate_is_deterministic_batched_and_cached(tmp_path):
    agent = Counter()
    report = openagent.evaluate(agent, tiers=["perception", "interaction"], n=6, seed=3, cache_dir=tmp_path)
    again = openagent.evaluate(agent, tiers=["perception", "interaction"], n=6, seed=3, cache_dir=tmp_path)
    assert report.to_dict()["rows"] == again.to_dict()["rows"]
    assert [r.tier for r in report.records].count("perception") == 6
    assert report.check("clean.success>=0.7 all.success>=0.7").ok
    assert report.check("clean.success>=1").verdict == "INCONCLUSIVE"  # no interval of 12 cases reaches 1


def test_evaluate_draws_from_the_pool_asked_for():
    train = openagent.evaluate("oracle", tiers=1, n=4, cache_dir=None, pool="train")
    held_out = openagent.evaluate("oracle", tiers=1, n=4, cache_dir=None)
    assert all(",train" in r.label for r in train.records), [r.label for r in train.records]
    assert all(",eval" in r.label for r in held_out.records), [r.label for r in held_out.records]
    assert (train.meta["pool"], held_out.meta["pool"]) == ("train", "eval")


def test_report_round_trips_and_gates(tmp_path):
    from sandbox.perturbations import names

    report = openagent.evaluate("oracle", tiers=1, n=4, names=names(1)[:2], cache_dir=None)
    path = tmp_path / "r.json"
    report.to_json(path)
    loaded = openagent.Report.load(path)
    assert loaded.to_dict()["rows"] == report.to_dict()["rows"]
    with pytest.raises(openagent.GateError, match="'x' is not a number"):
        report.check("perception.delta>=x")
    assert not report.check("perception.episodes>=100").ok
    assert "no episodes measured for 'reasoning'" in report.check("reasoning.success>=0").failures[0]


@pytest.mark.usefixtures("toy_perturbations")
def test_the_command_prints_the_table_writes_json_and_gates(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = ["eval", "--agent", "oracle", "--names", "toy_shout,toy_pad", "--n", "4", "--cache-dir", str(tmp_path)]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "perception" in printed and "Δ points" in printed and json.loads(out.read_text())["schema_version"] == 2
    assert main(["gate", str(out), "--gate", "perception.success>=0.5"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99"]) == 3  # 4 cases: inconclusive
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "pass"]) == 0
    assert main(["gate", str(out), "--gate", "perception.success>=0.99", "--inconclusive", "fail"]) == 1
    assert main(["gate", str(out), "--gate", "perception.episodes>=99"]) == 1
    assert "FAIL         perception.episodes>=99: measured 4 (n=4)" in capsys.readouterr().out
    assert main(["gate", str(out), "--baseline", str(out), "--max-regression", "100"]) == 0


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


class Dead:
    """An agent whose server is down: every request fails the same way."""

    def fingerprint(self):
        return "dead-v1"

    def act(self, turns):
        raise ConnectionRefusedError("[Errno 111] Connection refused")


def test_a_dead_agent_is_an_error_naming_the_cause_not_a_table_of_zeros(capsys):
    with pytest.raises(openagent.AgentFailure, match=r"failed on 16 of 16 episodes .*ConnectionRefusedError"):
        openagent.evaluate(Dead(), tiers=1, n=8, cache_dir=None)
    assert main(["eval", "--agent", f"{__name__}:Dead", "--tiers", "1", "--n", "8", "--no-cache"]) == 4
    captured = capsys.readouterr()
    assert "no measurement: the agent failed on 16 of 16 episodes" in captured.err and "Δ points" not in captured.out
