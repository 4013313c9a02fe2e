"""``module:attribute`` specs the user names, found in installed packages first, then in the current folder.

The current folder goes at the end of ``sys.path``, not the front: a file there named like a dependency
(``tabulate.py``) must not replace that dependency for the rest of the run. A user's own module in the
current folder is still found, unless an installed one has its name; then the error says so.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from sandbox.errors import UsageError


def import_attribute(spec: str, what: str) -> Any:
    """The object ``module:attr.sub`` names; a :class:`~sandbox.errors.UsageError` that says which part failed,
    about ``what``."""
    module_name, _, attr = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"{what}: cannot import module {module_name!r} ({exc}){_shadowed(module_name)}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(
                f"{what}: module {module_name!r} has no attribute {attr!r}{_shadowed(module_name)}"
            ) from None
    return obj


def _shadowed(module_name: str) -> str:
    """A note when a file of the current folder named ``module_name`` lost to an installed module of that name."""
    top = module_name.split(".")[0]
    local = [p.resolve() for p in (Path.cwd() / f"{top}.py", Path.cwd() / top) if p.exists()]
    where = getattr(sys.modules.get(top), "__file__", None)
    if not local or not where or any(Path(where).resolve().is_relative_to(p) for p in local):
        return ""
    return (
        f"; note: {local[0].name} in the current folder is not the {top!r} imported ({where}): installed "
        f"packages come first, so give your module another name"
    )
