"""Agents by spec: ``oracle``, ``static``, ``module:callable``, ``openai:MODEL@URL``, ``hf:PATH``."""

import pytest

from sandbox.agents import OracleAgent
from sandbox.agents.openai import OpenAIAgent
from sandbox.evaluation.specs import AgentSpecError, check_spec, load_agent


def echo(messages, tools):
    return "I cannot help with that."


class Counting:
    def act(self, turns):
        return ["I cannot help." for _ in turns]


def test_specs_name_builtin_callable_and_object_agents():
    assert isinstance(load_agent("oracle"), OracleAgent)
    assert load_agent(f"{__name__}:echo").fingerprint().startswith(f"function:{__name__}.echo@")
    assert isinstance(load_agent(f"{__name__}:Counting"), Counting)
    assert isinstance(load_agent("openai:qwen@http://localhost:9/v1"), OpenAIAgent)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("oracel", r"Unknown agent 'oracel'\. Did you mean 'oracle'\?"),
        ("openai:@http://x", "names no model"),
        ("hf:", "names no checkpoint"),
        ("no_such_module_xyz:agent", "cannot import module 'no_such_module_xyz'"),
        (f"{__name__}:missing", "has no attribute 'missing'"),
    ],
)
def test_bad_specs_say_what_was_given(spec, message):
    with pytest.raises(AgentSpecError, match=message):
        load_agent(spec)


def test_checking_a_spec_imports_nothing():
    assert check_spec(" some.module:factory ") == "some.module:factory"


def test_hf_specs_import_training_only_when_asked(monkeypatch, tmp_path):
    import json
    import sys

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "training.inference.model_agent", None)  # as if it were not installed
    with pytest.raises(AgentSpecError, match=r"pip install 'pytest-openagent\[train\]'"):
        load_agent(f"hf:{tmp_path}")
    with pytest.raises(AgentSpecError, match="hf:some/checkpoint: no such directory"):  # said before any load
        load_agent("hf:some/checkpoint")


SHADOW = """
from pathlib import Path

Path("shadowed").write_text("the local tabulate.py ran")


def tabulate(*args, **kwargs):
    return "SHADOWED TABLE"
"""

MINE = """
def agent(messages, tools):
    return "I cannot help with that."
"""


def test_a_users_module_is_found_after_installed_packages(tmp_path):
    from tests.commands import openagent

    (tmp_path / "tabulate.py").write_text(SHADOW)  # named like a dependency of the report's table
    (tmp_path / "mine.py").write_text(MINE)
    run = openagent("eval", "--agent", "mine:agent", "--tiers", "perception", "--n", "2", "--no-cache", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "SHADOWED" not in run.stdout and "perception" in run.stdout
    assert not (tmp_path / "shadowed").exists()


def test_a_local_file_that_loses_to_an_installed_package_is_named_in_the_error(tmp_path):
    from tests.commands import openagent

    (tmp_path / "tabulate.py").write_text(SHADOW + MINE)
    run = openagent("eval", "--agent", "tabulate:agent", "--n", "2", "--no-cache", cwd=tmp_path)
    assert run.returncode == 2 and "module 'tabulate' has no attribute 'agent'" in run.stderr
    assert "note: tabulate.py in the current folder is not the 'tabulate' imported" in run.stderr
    assert "installed packages come first, so give your module another name" in run.stderr
