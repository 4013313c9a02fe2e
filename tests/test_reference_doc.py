"""docs/reference.md names every option, metric and exit code the code has."""

from pathlib import Path

from pytest_openagent import cli
from pytest_openagent.options import HELP, ini_name, toml_name
from pytest_openagent.resolve import CONVERTERS
from sandbox.evaluation.gate import ALIASES, METRICS

DOC = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()


def test_every_option_is_documented_with_its_ini_and_toml_names():
    assert list(CONVERTERS) == list(HELP), "every option is read, in the order of its help"
    for option in HELP:
        assert f"`{option}` | `{ini_name(option)}` | `{toml_name(option)}`" in DOC, option


def test_every_gate_metric_and_alias_is_documented():
    for name in [*METRICS, *ALIASES.values()]:
        assert f"`{name}`" in DOC, name


def test_every_outcome_is_documented():
    from sandbox.judge import OUTCOMES

    for outcome in OUTCOMES:
        assert f"| `{outcome}` |" in DOC, outcome


def test_every_exit_code_is_documented():
    codes = [cli.EXIT_OK, cli.EXIT_GATE_FAILED, cli.EXIT_USAGE, cli.EXIT_INCONCLUSIVE, cli.EXIT_AGENT_FAILED]
    assert codes == [0, 1, 2, 3, 4]
    assert "| command | 0 | 1 | 2 | 3 | 4 |" in DOC


def test_the_cache_cap_is_the_documented_one():
    from sandbox.evaluation.cache import MAX_EPISODE_BYTES, STALE_TEMP_SECONDS

    assert f"`MAX_EPISODE_BYTES` ({MAX_EPISODE_BYTES >> 20} MiB)" in DOC
    assert f"older than {STALE_TEMP_SECONDS // 60} minutes" in DOC


def _environment_variables() -> set[str]:
    """The variables our packages read or set through ``os.environ`` or ``os.getenv``: each name as a literal,
    a module constant (a name or a tuple of names), or the loop variable over one of those."""
    import ast

    root = Path(__file__).resolve().parents[1]
    found: set[str] = set()
    for path in [p for package in ("sandbox", "training", "pytest_openagent") for p in (root / package).rglob("*.py")]:
        tree = ast.parse(path.read_text())
        constants: dict[str, ast.expr] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                constants[node.targets[0].id] = node.value
            elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
                constants[node.target.id] = node.iter

        def names(expr: ast.expr, depth: int = 0, constants: dict[str, ast.expr] = constants) -> set[str]:
            if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
                return {expr.value}
            if isinstance(expr, ast.Tuple | ast.List):
                return {n for e in expr.elts for n in names(e, depth + 1, constants)}
            if isinstance(expr, ast.Name) and expr.id in constants and depth < 3:
                return names(constants[expr.id], depth + 1, constants)
            return set()

        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
                owner = ast.unparse(node.func.value)
                if owner == "os.environ" or (owner == "os" and node.func.attr == "getenv"):
                    key = node.args[0]
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                key = node.slice
            if key is not None:
                found |= names(key)
    return found


def test_every_environment_variable_is_documented():
    variables = _environment_variables()
    assert {"OPENAGENT_HOME", "OPENAI_BASE_URL", "OPENAGENT_API_KEY", "HF_HUB_OFFLINE"} <= variables, variables
    section = DOC[DOC.index("## Environment variables") :]
    for name in sorted(variables):
        assert f"`{name}`" in section, name


def test_every_check_domain_option_is_documented():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["check-domain"]
    section = DOC[DOC.index("## Checking a world (`openagent check-domain`)") :]
    section = section[: section.index("\n## ", 1)]
    for action in sub._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                assert f"`{option}" in section, option
    assert "| `openagent check-domain` |" in DOC


def test_every_llm_proxy_option_is_documented():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["llm-proxy"]
    section = DOC[DOC.index("## Faults on the model's side (`openagent llm-proxy`)") :]
    section = section[: section.index("\n## ", 1)]
    for action in sub._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                assert f"`{option}" in section, option
    assert "| `openagent llm-proxy` |" in DOC


def test_every_diff_test_and_mcp_proxy_option_is_documented():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    headings = {
        "diff-test": "## Testing a release (`openagent diff-test OLD.json NEW.json`)",
        "mcp-proxy": "## MCP servers (`openagent eval --mcp`, `openagent mcp-proxy`)",
    }
    for command, heading in headings.items():
        section = DOC[DOC.index(heading) :]
        section = section[: section.index("\n## ", 1)]
        for action in commands[command]._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in section, (command, option)
        assert f"| `openagent {command}` |" in DOC
