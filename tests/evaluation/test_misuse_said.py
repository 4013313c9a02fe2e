"""Nonsense is misuse said in one line (exit 2 / pytest usage error), never accepted, never a traceback (issue #45)."""

from __future__ import annotations

import json

import pytest

from pytest_openagent.cli import main

pytest_plugins = ["pytester"]

RECORD = {
    "test": "t", "agent": "a", "case": "c", "label": "l", "task": "t", "family": "f", "n_calls": 1,
    "perturbations": ["x"], "tier": "perception", "solvable": True, "outcome": "success", "success": True,
    "tool_errors": 0, "calls": 1, "clean_outcome": "success", "clean_success": True, "clean_solvable": True,
    "clean_tool_errors": 0, "clean_calls": 1,
}  # fmt: skip


def _exits_2(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("option", "words"),
    [(["--port", "99999"], "a port is 0 to 65535"), (["--port", "-1"], "at least 0"),
     (["--timeout", "-1"], "above 0"), (["--timeout", "0"], "above 0"), (["--timeout", "nan"], "above 0")],
)  # fmt: skip
def test_mcp_proxy_refuses_a_port_or_timeout_that_cannot_be(option, words, capsys):
    assert words in _exits_2(["mcp-proxy", "--upstream", "stdio:python -m nothing", *option], capsys)


@pytest.mark.parametrize(
    ("field", "value"), [("n_calls", "two"), ("tool_errors", "0"), ("success", 1), ("label", 5), ("tier", 3)]
)
def test_gate_refuses_a_report_whose_records_are_wrongly_typed(field, value, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "pytest-openagent/report", "schema_version": 4,
                                "records": [{**RECORD, field: value}]}))  # fmt: skip
    err = _exits_2(["gate", str(path), "--gate", "perception.success>=0.5"], capsys)
    assert "malformed" in err and field in err


def test_an_empty_gate_is_misuse_not_no_gate(tmp_path, capsys):
    assert "the gate is empty" in _exits_2(
        ["eval", "--agent", "oracle", "--n", "1", "--no-cache", "--gate", ""], capsys
    )
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "pytest-openagent/report", "schema_version": 4, "records": [RECORD]}))
    assert "the gate is empty" in _exits_2(["gate", str(path), "--gate", " "], capsys)


def test_a_negative_count_is_misuse(tmp_path, capsys):
    err = _exits_2(["train", "sft", "--threads", "-3", "--out", str(tmp_path / "run")], capsys)
    assert "--threads -3: must be 0 or more" in err
    assert not (tmp_path / "run").exists()


def test_mcp_settings_without_an_mcp_server_are_misuse(capsys):
    err = _exits_2(["check-domain", "poi", "--mcp-reset", "bogus", "--no-cache"], capsys)
    assert "--mcp-reset is about an MCP server" in err


def test_a_tool_openagent_that_is_no_table_is_a_usage_error(pytester):
    pytester.makepyprojecttoml("[tool]\nopenagent = 5\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*must be a table of options*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("value", ["true", "5"])
def test_a_report_file_name_that_is_no_name_is_a_usage_error(value, pytester):
    pytester.makepyprojecttoml(f"[tool.openagent]\nreport = {value}\n")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is not a file name*"])
    assert not (pytester.path / "True").exists()


def test_a_state_factory_that_fails_after_definition_is_said_not_a_key_error(tmp_path):
    import sandbox
    from sandbox.audits.check_domain import check_domain
    from sandbox.evaluation.evaluate import evaluate
    from sandbox.evaluation.runner import AgentFailure

    calls = {"n": 0}

    @sandbox.tool
    def get(state, key: str) -> dict:
        """Get a value.

        Args:
            key: the key
        """
        return {"value": state["data"][key]}

    def state(seed):
        calls["n"] += 1
        if calls["n"] > 1:  # fine while the domain is defined, gone after
            raise RuntimeError("database gone")
        return {"data": {"a": "apple"}}

    task = sandbox.UserTask("What is a?", id="a", plan=[sandbox.Call(id="g", tool="get", args={"key": "a"})],
                            sources={"value": "g.value"})  # fmt: skip
    domain = sandbox.define_domain("failing-state", [get], state=state, tasks=[task])
    with pytest.raises(sandbox.errors.UsageError, match=r"no episode of failing-state starts: .*database gone"):
        check_domain(domain, cache_dir=None)
    with pytest.raises(AgentFailure, match="database gone; fix the domain"):
        evaluate("oracle", "all", n=2, domain=domain, cache_dir=None)
