"""An agent's own code: the modules it imports from outside the installed packages, and the files it declares.

A team's agent rarely lives in one module: its policy, prompt or tool mapping come from others of the
project. :func:`code_digest` of a module covers the bytes of that module's file and of every module
it imports (``import x``, ``from x import y``, relative imports, imports inside functions), followed
through those modules in turn, as long as they are the project's own: not the standard library, not
a module under ``site-packages`` or ``dist-packages``, not this package's own modules (the sandbox
version is in every case's key already). Imports are read from the source (``ast``); nothing is
imported to read them.

Files that decide behaviour without being Python (a prompt template, a tool map in YAML) are declared
by ``openagent_files = ["prompts/system.txt", ...]`` on the agent, its class, its function or one of
those modules; a relative path is taken from the declaring module's folder (else the current folder).
A folder counts by every file under it; a missing file counts as missing, so creating it changes the key.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import os
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

FILES_ATTRIBUTE = "openagent_files"
"""Set it on an agent, its class, its function or its module to put the bytes of those files in its cache key."""

OWN_PACKAGES = frozenset({"sandbox", "pytest_openagent", "training"})
MAX_MODULES = 500
"""At most this many modules are followed from one module (a project larger than that is cut, in name order)."""

_CHUNK = 1 << 20
_files: dict[tuple[str, int, int, int, int], str] = {}
_imports: dict[tuple[str, int, int], tuple[str, ...]] = {}


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, memoised in this process by path, size, mtime, inode and ctime."""
    path = os.path.abspath(path)
    st = os.stat(path)
    stamp = (path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    hit = _files.get(stamp)
    if hit is None:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        hit = _files[stamp] = digest.hexdigest()
    return hit


def is_own_code(module_name: str) -> bool:
    """Whether a loaded module is the project's own code: a source file outside the installed packages."""
    path = _module_file(module_name)
    return path is not None and _outside_installed(path) and module_name.partition(".")[0] not in OWN_PACKAGES


def code_digest(module_names: Iterable[str], extra_files: Iterable[str | os.PathLike[str]] = ()) -> str:
    """A digest of the own modules reachable from ``module_names`` by import, and of their declared files.

    A module of ``module_names`` that has no source file (a notebook's ``__main__``, an ``exec``) counts
    as absent; the caller covers its code another way.
    """
    files: dict[str, str] = {}
    for name in closure(module_names):
        path = _module_file(name)
        if path is not None:
            files[f"module:{name}"] = file_digest(path)
            module = sys.modules.get(name)
            base = Path(path).parent
            for declared in _declared(getattr(module, FILES_ATTRIBUTE, None) if module else None):
                files.update(_describe_files(base / declared))
    for extra in extra_files:
        files.update(_describe_files(Path(extra)))
    blob = "\0".join(f"{k}={v}" for k, v in sorted(files.items()))
    return hashlib.sha256(blob.encode()).hexdigest()


def declared_files(obj: Any) -> list[Path]:
    """The files ``obj`` (an agent, its class or its function) declares by :data:`FILES_ATTRIBUTE`, made absolute."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    base = Path(path).parent if path else Path.cwd()
    return [base / p for p in _declared(getattr(obj, FILES_ATTRIBUTE, None))]


def closure(module_names: Iterable[str]) -> list[str]:
    """The modules of ``module_names`` that are the project's own, and those they import, transitively, sorted."""
    seen: set[str] = set()
    todo = [n for n in module_names if is_own_code(n)]
    while todo and len(seen) < MAX_MODULES:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        todo.extend(n for n in _imported(name, path) if n not in seen and is_own_code(n))
    return sorted(seen)


def _declared(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


def _describe_files(path: Path) -> Iterator[tuple[str, str]]:
    key = f"file:{path.resolve()}"
    if path.is_file():
        yield key, file_digest(path)
    elif path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            yield f"file:{child.resolve()}", file_digest(child)
    else:
        yield key, "missing"


def _module_file(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None) if module is not None else _find(module_name)
    if not path or not path.endswith(".py") or not os.path.isfile(path):
        return None
    return path


def _find(module_name: str) -> str | None:
    """The source file of a module not loaded yet, found without importing anything."""
    parent, _, last = module_name.rpartition(".")
    if parent:
        search = getattr(sys.modules.get(parent), "__path__", None)
        if search is None:
            return None
    else:
        search = None
    try:
        spec = importlib.machinery.PathFinder.find_spec(last, search)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.has_location else None


_INSTALLED_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")
_INSTALLED = tuple({os.path.realpath(p) + os.sep for k in _INSTALLED_PATHS if (p := sysconfig.get_path(k))})


def _outside_installed(path: str) -> bool:
    real = os.path.realpath(path)
    parts = Path(real).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not real.startswith(_INSTALLED)


def _imported(module_name: str, path: str) -> tuple[str, ...]:
    st = os.stat(path)
    stamp = (path, st.st_size, st.st_mtime_ns)
    hit = _imports.get(stamp)
    if hit is None:
        hit = _imports[stamp] = tuple(sorted(set(_imports_of(module_name, path))))
    return hit


def _imports_of(module_name: str, path: str) -> Iterator[str]:
    try:
        tree = ast.parse(Path(path).read_bytes(), path)
    except (SyntaxError, ValueError, OSError):
        return
    package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _with_parents(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if not source:
                continue
            yield from _with_parents(source)
            for alias in node.names:
                if alias.name != "*":
                    yield f"{source}.{alias.name}"  # a submodule, if it is one (else it has no file)


def _with_parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])
