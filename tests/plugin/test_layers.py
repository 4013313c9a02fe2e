"""The arrows between the plugin, the evaluation core and the sandbox, read from the source."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> set[str]:
    """Every module an import statement in ``path`` names, at any depth (a lazy import is an arrow too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_a_case_knows_the_shape_of_a_runner_not_the_evaluation_core():
    assert not {m for m in _imported(ROOT / "sandbox" / "case.py") if m.startswith("sandbox.evaluation")}


def test_gates_read_reports_and_a_report_knows_no_gates():
    assert "sandbox.evaluation.report" in _imported(ROOT / "sandbox" / "evaluation" / "gate.py")
    assert "sandbox.evaluation.gate" not in _imported(ROOT / "sandbox" / "evaluation" / "report.py")


def test_the_plugin_uses_no_pytest_internals():
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "pytest_openagent").rglob("*.py"))
        for name in _imported(path)
        if name.split(".")[0] in {"_pytest", "_hypothesis_pytestplugin"}
    ]
    assert offenders == []
