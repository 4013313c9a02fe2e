from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text().splitlines()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    opening = [line for line in readme[readme.index("```bash") + 1 :] if not line.startswith("#")]
    main_command, test_command = opening[0], opening[1]
    assert "openagent" in main_command and "torch==2.13.0" in main_command
    assert test_command in ci
    assert "pytest" in test_command
