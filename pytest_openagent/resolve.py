"""The plugin's options resolved from the command line, ini and ``[tool.openagent]``, every value checked.

Loaded when a run uses the plugin (an option given, an openagent test or fixture), never by a run that
does not. Precedence: command line, then ``[tool.pytest.ini_options]`` (or any pytest ini file), then
``[tool.openagent]`` in the rootdir's ``pyproject.toml``, then the default. Every value is checked
here, so a bad one is a ``pytest.UsageError`` before any test runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_openagent.options import (
    AGENT,
    BASELINE,
    CACHE_DIR,
    DEFAULT_CACHE_DIR,
    DOMAIN,
    DRIFT,
    FAMILIES,
    GATE,
    HTML,
    INCONCLUSIVE,
    INCONCLUSIVE_POLICIES,
    MAX_REGRESSION,
    MAX_STEPS,
    MCP,
    MCP_INSPECT,
    MCP_RESET,
    MCP_ROLES,
    MCP_TASKS,
    NAMES,
    NO_CACHE,
    PLOT,
    PRICE,
    REPORT,
    SEARCH,
    SEARCHES,
    SEED,
    SEQUENTIAL,
    TIERS,
    N,
    ini_name,
    pyproject,
    toml_name,
)  # fmt: skip
from sandbox.errors import UsageError, did_you_mean
from sandbox.evaluation.cost import check_prices, parse_prices
from sandbox.evaluation.criterion import Criterion
from sandbox.evaluation.draw import domain_names, perturbation_classes
from sandbox.evaluation.gate import check_margin, parse_gate
from sandbox.evaluation.report import Report
from sandbox.evaluation.specs import check_agent
from sandbox.files import check_output_file
from sandbox.perturbations.registry import normalize_tiers


@dataclass(frozen=True)
class Options:
    agent: str = "oracle"
    seed: int = 0
    report: Path | None = None
    html: Path | None = None
    plot: Path | None = None
    gate: tuple[Criterion, ...] = ()
    gate_text: str = ""
    baseline: Report | None = None
    baseline_path: Path | None = None
    max_regression: float = 5.0
    cache_dir: Path = DEFAULT_CACHE_DIR
    no_cache: bool = False
    n: int | None = None
    tiers: str | list[str | int] = "all"
    names: tuple[str, ...] | None = None
    families: tuple[str, ...] | None = None
    domain: str = "poi"
    mcp: str | None = None
    mcp_tasks: Path | None = None
    mcp_reset: str | None = None
    mcp_inspect: str | None = None
    mcp_roles: tuple[tuple[str, str], ...] = ()
    inconclusive: str = "fail"
    max_steps: int | None = None
    drift: bool = False
    search: str = "default"
    sequential: bool = False
    prices: dict[str, tuple[float, float]] | None = None

    @property
    def measures(self) -> bool:
        """Whether the session runs the fixed measurement: something reads it, or it was asked for."""
        return (
            bool(self.gate)
            or self.baseline is not None
            or self.n is not None
            or any(path is not None for path in (self.report, self.html, self.plot))
        )


def resolve(config: pytest.Config) -> Options:
    table = pyproject(config.rootpath)

    def raw(option: str) -> tuple[Any, str, Path]:
        """The value, where it came from (for error messages), and the folder relative paths start from."""
        value = config.getoption(option)
        if value is not None:
            return value, option, config.invocation_params.dir
        value = config.getini(ini_name(option))
        if value not in (None, "", []):
            return value, f"ini option {ini_name(option)}", config.rootpath
        if toml_name(option) in table:
            return table[toml_name(option)], f"[tool.openagent] {toml_name(option)}", config.rootpath
        return None, option, config.rootpath

    values: dict[str, Any] = {"cache_dir": config.rootpath / DEFAULT_CACHE_DIR}
    for option, convert in CONVERTERS.items():
        value, where, base = raw(option)
        if value is None or value == "" or value == []:
            continue
        try:
            values.update(convert(value, base, values))
        except UsageError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
    return Options(**values)


Converter = Callable[[Any, Path, dict[str, Any]], dict[str, Any]]
"""``(value, folder relative paths start from, values so far) -> fields of Options``; raises UsageError."""


def _path(value: Any, option: str) -> str:
    """A file name given as an option's value: text, never ``true`` or a number read from TOML."""
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f'{option}: {value!r} is not a file name; give the file to write, e.g. "report.json"')
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return " ".join(value)
    raise UsageError(f"{value!r} is not text; give criteria such as 'perception.delta>=-10', or 'default'")


def _integer(value: Any, what: str) -> int:
    """A whole number from the command line (text) or TOML (an int); ``what`` says what was expected."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise UsageError(f"{value!r} is not {what}")


def _items(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _gate(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.perturbations import names

    return {"gate": tuple(parse_gate(_text(value), known_scopes=names())), "gate_text": _text(value)}


def _sequential(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    on = _flag("sequential")(value, base, values)
    if on["sequential"] and not values.get("gate"):
        raise UsageError(f"a sequential gate stops criteria at their thresholds: give them with {GATE} "
                         "(e.g. 'clean.success>=0.8'), or drop it")  # fmt: skip
    if on["sequential"] and values.get("baseline") is not None:
        raise UsageError(f"the baseline comparison ({BASELINE}) reads every case of the baseline, which a sequential "
                         "gate does not run: drop one of them")  # fmt: skip
    return on


def _baseline(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    return {"baseline": Report.load(base / str(value)), "baseline_path": base / str(value)}


def _plot(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.evaluation.figures import require_plot

    require_plot()
    return {"plot": check_output_file(base / _path(value, PLOT), "the figure")}


def _n(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    n = _integer(value, "a whole number of cases per tier (e.g. 50)")
    if n < 1:
        raise UsageError(f"{value!r}: give at least 1 case per tier (e.g. 50)")
    return {"n": n}


def _max_steps(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    steps = _integer(value, "a whole number of turns (e.g. 20)")
    if steps < 1:
        raise UsageError(f"{value!r}: give at least 1 turn (e.g. 20)")
    return {"max_steps": steps}


def _tiers(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    tiers = [int(t) if t.isdigit() else t for t in _items(value)]
    if tiers == ["all"]:
        return {"tiers": "all"}
    normalize_tiers(tiers)
    return {"tiers": tiers}


def _names(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    names = tuple(_items(value))
    perturbation_classes(values.get("tiers", "all"), names)
    return {"names": names}


def _families(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.evaluation.draw import task_pool

    families = tuple(_items(value))
    task_pool(domain_names(values.get("domain", "poi")), "test", families)  # an unknown family: did you mean
    return {"families": families}


def _domain(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    domain_names(str(value))
    return {"domain": str(value)}


def _mcp_tasks(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    path = base / str(value)
    if not path.is_file():
        raise UsageError(f"{str(value)!r}: no such file; give a JSONL file of tasks for the MCP server (docs/mcp.md)")
    return {"mcp_tasks": path}


def _mcp_reset(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.domains.mcp.settings import parse_reset

    return {"mcp_reset": parse_reset(value)}


def _mcp_inspect(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.domains.mcp.settings import parse_inspect

    return {"mcp_inspect": parse_inspect(value)}


def _mcp_roles(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.domains.mcp.settings import parse_roles

    return {"mcp_roles": tuple(parse_roles(value).items())}


def _mcp(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.domains.mcp import NAME, McpSettings, configure

    settings = McpSettings(values.get("mcp_reset"), values.get("mcp_inspect"), dict(values.get("mcp_roles", ())))
    # Named now (checked, not connected) so that the 'mcp' domain, here and in xdist workers, is this server's.
    in_force = configure(str(value), values.get("mcp_tasks"), settings)
    # the tasks file's header may give the step budget; MAX_STEPS, read later, overrides it where given
    steps = {} if in_force.max_steps is None else {"max_steps": in_force.max_steps}
    return {"mcp": str(value), "domain": NAME, **steps}  # DOMAIN, read next, overrides it where given


def _inconclusive(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if str(value) not in INCONCLUSIVE_POLICIES:
        raise UsageError(did_you_mean("policy", str(value), INCONCLUSIVE_POLICIES))
    return {"inconclusive": str(value)}


def _search(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if str(value) not in SEARCHES:
        raise UsageError(did_you_mean("search", str(value), SEARCHES))
    return {"search": str(value)}


def _seed(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, str) and value.strip().lower() == "random":
        return {"seed": random.randrange(2**32)}
    seed = _integer(value, "a seed; give an integer >= 0 or 'random'")
    if seed < 0:
        raise UsageError(f"{value!r} is negative; give an integer >= 0 or 'random'")
    return {"seed": seed}


def _flag(field: str) -> Converter:
    """A converter of a boolean option to the field ``field``: a bool, or its words (true/false, yes/no, 1/0)."""

    def convert(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
        if isinstance(value, bool):
            return {field: value}
        text = str(value).strip().lower()
        if text not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise UsageError(f"{value!r} is not a boolean; use true or false")
        return {field: text in ("1", "true", "yes", "on")}

    return convert


CONVERTERS: dict[str, Converter] = {
    AGENT: lambda value, base, values: {"agent": check_agent(str(value))},
    SEED: _seed,
    REPORT: lambda value, base, values: {"report": check_output_file(base / _path(value, REPORT))},
    HTML: lambda value, base, values: {"html": check_output_file(base / _path(value, HTML), "the HTML report")},
    PLOT: _plot,
    GATE: _gate,
    BASELINE: _baseline,
    MAX_REGRESSION: lambda value, base, values: {"max_regression": check_margin(value)},
    SEQUENTIAL: _sequential,  # after GATE and BASELINE: it needs the one and refuses the other
    N: _n,
    TIERS: _tiers,
    NAMES: _names,  # after TIERS: the names are checked against the tiers
    MCP_TASKS: _mcp_tasks,
    MCP_RESET: _mcp_reset,
    MCP_INSPECT: _mcp_inspect,
    MCP_ROLES: _mcp_roles,
    MCP: _mcp,  # after MCP_TASKS, before DOMAIN: names the server that the domain 'mcp' is
    DOMAIN: _domain,
    FAMILIES: _families,  # after DOMAIN: the families are checked against its tasks
    INCONCLUSIVE: _inconclusive,
    MAX_STEPS: _max_steps,
    DRIFT: _flag("drift"),
    SEARCH: _search,
    PRICE: lambda value, base, values: {"prices": check_prices(parse_prices(value), values.get("agent", "oracle"))},
    CACHE_DIR: lambda value, base, values: {"cache_dir": base / str(value)},
    NO_CACHE: _flag("no_cache"),
}
"""How each option's value becomes fields of :class:`Options`, in the order they are read."""
