"""How an MCP domain is run, written as text: ``reset``, ``inspect``, ``roles``, ``hide`` and the step budget.

The same settings come from ``openagent eval --mcp-reset/--mcp-inspect/--mcp-roles``, the pytest options
``--openagent-mcp-reset/-inspect/-roles``, ``[tool.openagent]`` and a tasks file's header (its first line
``{"openagent": {"reset": "tool:reset", "inspect": "tool:list_notes", "roles": {"add_note": "write"},
"max_steps": 12}}``); an option given wins over the header. Read without importing the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sandbox.errors import UsageError, did_you_mean
from sandbox.tools import ROLES

RESETS = "'auto', 'restart', 'tool:NAME', 'none' (the writes do not matter) or module:function"
INSPECTS = "'tool:NAME' or module:function"
ROLES_HELP = "tool=role pairs joined by commas, e.g. 'add_note=write,get_note=lookup'"
HIDES = "tool names, or 'tool.argument' / '*.argument' for an optional argument, e.g. ['get_call_log', '*.state_key']"
KEYS = ("reset", "inspect", "roles", "hide", "max_steps")


@dataclass(frozen=True)
class McpSettings:
    """Settings as text (``None``: not given). ``reset`` ``"none"`` says the writes do not matter."""

    reset: str | None = None
    inspect: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    max_steps: int | None = None
    hide: tuple[str, ...] = ()
    """Tools, and optional arguments (``tool.argument``, ``*.argument``), the agent does not see."""

    def over(self, base: McpSettings) -> McpSettings:
        """These settings where given, ``base``'s elsewhere (roles merged, these winning)."""
        return McpSettings(
            reset=self.reset if self.reset is not None else base.reset,
            inspect=self.inspect if self.inspect is not None else base.inspect,
            roles={**base.roles, **self.roles},
            max_steps=self.max_steps if self.max_steps is not None else base.max_steps,
            hide=tuple(dict.fromkeys((*base.hide, *self.hide))),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> McpSettings:
        if not text:
            return cls()
        values = json.loads(text)
        return cls(**{**values, "hide": tuple(values.get("hide", ()))})


def parse_reset(value: Any) -> str:
    """``value`` checked as a reset's text; a :class:`UsageError` that lists the forms."""
    text = str(value).strip() if value is not None else ""
    if text in ("auto", "restart", "none") or (text.startswith("tool:") and text != "tool:") or _attribute(text):
        return text
    raise UsageError(f"reset {value!r}: give {RESETS}")


def parse_inspect(value: Any) -> str:
    text = str(value).strip() if value is not None else ""
    if (text.startswith("tool:") and text != "tool:") or _attribute(text):
        return text
    raise UsageError(f"inspect {value!r}: give {INSPECTS}")


def parse_roles(value: Any) -> dict[str, str]:
    """Roles from ``'a=write,b=lookup'`` (or a list of such pairs, or a TOML/JSON table)."""
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        items = value if isinstance(value, list) else str(value).split(",")
        pairs = []
        for item in (str(i).strip() for i in items):
            if not item:
                continue
            name, sep, role = item.partition("=")
            if not sep or not name.strip():
                raise UsageError(f"roles {value!r}: {item!r} is no tool=role pair; give {ROLES_HELP}")
            pairs.append((name.strip(), role.strip()))
    for name, role in pairs:
        if role not in ROLES:
            raise UsageError(f"roles: tool {name!r}: {did_you_mean('role', role, ROLES)}")
    return dict(pairs)


def parse_hide(value: Any) -> tuple[str, ...]:
    """What to hide from the agent: a list (or a comma-joined text) of tool names and ``tool.argument`` /
    ``*.argument`` entries; a :class:`UsageError` that shows the form."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    names = tuple(str(i).strip() for i in items if str(i).strip())
    for name in names:
        tool, dot, argument = name.partition(".")
        if not tool or (dot and not argument) or argument.count("."):
            raise UsageError(f"hide {value!r}: {name!r} is no tool name or tool.argument; give {HIDES}")
    return names


def parse_settings(raw: Any, where: str) -> McpSettings:
    """A header's (or any table's) settings, each checked; ``where`` names it in messages."""
    if not isinstance(raw, Mapping):
        raise UsageError(f'{where}: the settings are an object such as {{"reset": "tool:reset"}}, got {raw!r}')
    unknown = [k for k in raw if k.replace("-", "_") not in KEYS]
    if unknown:
        raise UsageError(f"{where}: {did_you_mean('setting', unknown[0], KEYS)}")
    values = {k.replace("-", "_"): v for k, v in raw.items()}
    try:
        settings = McpSettings(
            reset=None if values.get("reset") is None else parse_reset(values["reset"]),
            inspect=None if values.get("inspect") is None else parse_inspect(values["inspect"]),
            roles=parse_roles(values.get("roles") or {}),
            hide=parse_hide(values.get("hide") or ()),
        )
        steps = values.get("max_steps")
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise UsageError(f"max_steps {steps!r}: give a whole number of turns (at least 1)")
            settings = replace(settings, max_steps=steps)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return settings


def reset_value(text: str | None) -> Any:
    """The ``reset=`` argument of :func:`~sandbox.domains.mcp.mcp_domain` that ``text`` says (a hook imported)."""
    if text is None:
        return "auto"
    if text == "none":
        return None
    return _hook(text, "reset hook") if _attribute(text) else text


def inspect_value(text: str | None) -> Any:
    if text is None:
        return None
    return _hook(text, "inspect function") if _attribute(text) else text


def _attribute(text: str) -> bool:
    module, sep, attr = text.partition(":")
    parts = (*module.split("."), *attr.split("."))
    return bool(sep) and module != "tool" and all(p.isidentifier() for p in parts)


def _hook(text: str, what: str) -> Any:
    from sandbox.importing import import_attribute

    obj = import_attribute(text, f"{what} {text!r}")
    if not callable(obj):
        raise UsageError(f"{what} {text!r} is a {type(obj).__name__}, not a function")
    return obj


__all__ = ["KEYS", "McpSettings", "inspect_value", "parse_hide", "parse_inspect", "parse_reset", "parse_roles",
           "parse_settings", "reset_value"]  # fmt: skip
