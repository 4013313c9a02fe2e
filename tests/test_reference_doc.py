"""docs/reference.md names every option, metric and exit code the code has."""

from pathlib import Path

from pytest_openagent import cli
from pytest_openagent.options import CONVERTERS, HELP, ini_name, toml_name
from sandbox.evaluation.gate import ALIASES, METRICS

DOC = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()


def test_every_option_is_documented_with_its_ini_and_toml_names():
    assert list(CONVERTERS) == list(HELP), "every option is read, in the order of its help"
    for option in HELP:
        assert f"`{option}` | `{ini_name(option)}` | `{toml_name(option)}`" in DOC, option


def test_every_gate_metric_and_alias_is_documented():
    for name in [*METRICS, *ALIASES.values()]:
        assert f"`{name}`" in DOC, name


def test_every_exit_code_is_documented():
    codes = [cli.EXIT_OK, cli.EXIT_GATE_FAILED, cli.EXIT_USAGE, cli.EXIT_INCONCLUSIVE, cli.EXIT_AGENT_FAILED]
    assert codes == [0, 1, 2, 3, 4]
    assert "| command | 0 | 1 | 2 | 3 | 4 |" in DOC


def test_the_cache_cap_is_the_documented_one():
    from sandbox.evaluation.cache import MAX_EPISODE_BYTES, STALE_TEMP_SECONDS

    assert f"`MAX_EPISODE_BYTES` ({MAX_EPISODE_BYTES >> 20} MiB)" in DOC
    assert f"older than {STALE_TEMP_SECONDS // 60} minutes" in DOC
