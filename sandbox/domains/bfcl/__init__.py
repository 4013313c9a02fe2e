"""BFCL multi-turn as an external world: the ``bfcl`` domain over the ``bfcl-eval`` wheel's data.

Needs the wheel without its dependency set, and the one module its eight backends import::

    pip install mpmath && pip install --no-deps bfcl-eval==2026.3.23

Importing this package loads no BFCL data and imports nothing of ``bfcl_eval``: the tasks load
when first asked for (``get_domain("bfcl").tasks()``), the backend modules when an env is first built.
See docs/bfcl.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.domains.bfcl.data import CATEGORIES

if TYPE_CHECKING:
    from sandbox.domains.bfcl.domain import BfclDomain


def load() -> BfclDomain:
    """The ``bfcl`` domain; an :class:`ImportError` that says how to install if ``bfcl-eval`` is missing."""
    try:
        import bfcl_eval  # noqa: F401
        import mpmath  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the bfcl domain needs the bfcl-eval wheel ({exc.name} is missing): "
            "pip install mpmath && pip install --no-deps bfcl-eval==2026.3.23"
        ) from exc
    from sandbox.domains.bfcl.domain import BFCL

    return BFCL


__all__ = ["CATEGORIES", "load"]
