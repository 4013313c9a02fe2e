"""Every script under ``benchmarks/`` answers ``--help`` (without running), and names only what our packages hold."""

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.processes import run

ROOT = Path(__file__).parent.parent
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
OURS = ("sandbox", "training", "pytest_openagent")


def _defined(module: str) -> set[str]:
    """The names a module of ours binds at its top level, read from its source (nothing imported, no torch)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"no module {module}"
    names: set[str] = set()
    for node in ast.parse(Path(spec.origin).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    if spec.submodule_search_locations:  # a package: its submodules, and what its __getattr__ serves lazily
        names.update(p.stem for loc in spec.submodule_search_locations for p in Path(loc).iterdir())
        names.update(n.value for n in ast.walk(ast.parse(Path(spec.origin).read_text()))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str))  # fmt: skip
    return names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_names_only_what_exists(script: Path):
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
            missing = [a.name for a in node.names if a.name not in _defined(node.module)]
            assert not missing, f"{script.name}:{node.lineno}: {node.module} has no {', '.join(missing)}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_answers_help(script: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = run([sys.executable, str(script), "--help"], env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:500]
