"""The layers of DESIGN.md: imports run one way, and nothing heavy loads where it need not."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loaded(code: str) -> set[str]:
    probe = f"import sys; {code}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return set(out.split())


def test_the_evaluation_core_imports_neither_pytest_nor_hypothesis():
    loaded = _loaded("import sandbox, sandbox.evaluation, sandbox.evaluation.specs")
    assert not loaded & {"pytest", "_pytest", "hypothesis", "torch", "transformers", "pytest_openagent"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_training_and_sandbox_never_import_the_plugin():
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for package in ("training", "sandbox")
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] == "pytest_openagent"
    ]
    assert offenders == []
