"""``module:attribute`` specs, imported from the current folder as a user's own modules are."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def import_attribute(spec: str, what: str) -> Any:
    """The object ``module:attr.sub`` names; a ``ValueError`` that says which part failed, about ``what``."""
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{what}: cannot import module {module_name!r} ({exc})") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{what}: module {module_name!r} has no attribute {attr!r}") from None
    return obj
