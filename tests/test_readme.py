from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text().splitlines()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    block = readme[readme.index("```bash") + 1 :]
    opening = [line for line in block[: block.index("```")] if not line.startswith("#")]
    plugin_only, main_command, test_command = opening
    assert "-e ." in plugin_only and "torch" not in plugin_only and "openagent eval" in plugin_only
    assert "openagent demo" in main_command and "torch==2.13.0" in main_command
    assert test_command in ci
    assert "pytest" in test_command
