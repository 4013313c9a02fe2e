"""BFCL's gold calls, such as ``cd(folder='document')``, read with :mod:`ast` (never ``eval``).

A gold call is one Python call expression whose arguments are literals: strings, numbers (a
leading minus included), booleans, ``None``, and lists, tuples and dicts of them. Anything else
(a name, an attribute, a nested call, an operator) is refused with a :class:`ValueError` that
quotes the call.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GoldCall:
    """One parsed call: the method name, its positional and its keyword arguments."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def keywords(self, method: Callable[..., Any]) -> dict[str, Any]:
        """All arguments by name, the positional ones named from ``method``'s signature (bound or not:
        an unbound method's ``self`` is skipped)."""
        if not self.args:
            return dict(self.kwargs)
        params = list(inspect.signature(method).parameters)
        skip = 1 if params and params[0] == "self" else 0
        bound = inspect.signature(method).bind(*([None] * skip), *self.args, **self.kwargs)
        return {k: v for k, v in bound.arguments.items() if not (skip and k == "self")}


def parse_call(text: str) -> GoldCall:
    """``"mv(source='a', destination='b')"`` as a :class:`GoldCall`."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not a call expression: {text!r} ({exc.msg})") from None
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call of a plain function name: {text!r}")
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise ValueError(f"*args and **kwargs are not literal arguments: {text!r}")
    try:
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise ValueError(f"arguments must be literals: {text!r}") from None
    return GoldCall(node.func.id, args, kwargs)
