"""The plugin's options: names, help, and their resolution from the command line, ini and ``[tool.openagent]``.

Precedence: command line, then ``[tool.pytest.ini_options]`` (or any pytest ini file), then
``[tool.openagent]`` in the rootdir's ``pyproject.toml``, then the default. Every value is checked
here, so a bad one is a ``pytest.UsageError`` before any test runs.
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.errors import UsageError, did_you_mean
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR
from sandbox.evaluation.draw import domain_names, perturbation_classes
from sandbox.evaluation.gate import Criterion, check_margin, parse_gate
from sandbox.evaluation.report import Report
from sandbox.evaluation.specs import SPEC_HELP, check_spec
from sandbox.perturbations.registry import normalize_tiers

AGENT = "--openagent-agent"
SEED = "--openagent-seed"
REPORT = "--openagent-report"
GATE = "--openagent-gate"
BASELINE = "--openagent-baseline"
MAX_REGRESSION = "--openagent-max-regression"
CACHE_DIR = "--openagent-cache-dir"
NO_CACHE = "--openagent-no-cache"
N = "--openagent-n"
TIERS = "--openagent-tiers"
NAMES = "--openagent-names"
DOMAIN = "--openagent-domain"
MCP = "--openagent-mcp"
MCP_TASKS = "--openagent-mcp-tasks"
INCONCLUSIVE = "--openagent-inconclusive"
INCONCLUSIVE_POLICIES = ("fail", "pass")

HELP = {
    AGENT: f"agent under test: {SPEC_HELP} (default: oracle)",
    SEED: "seed of every openagent test's examples, an int or 'random' (default: 0)",
    REPORT: "write the robustness report as JSON to this path",
    GATE: "fail the session unless the measurement meets these criteria (verdicts from 95% intervals), "
    "e.g. 'clean.success>=0.95 perception.delta>=-10', or 'default'",
    BASELINE: "a report JSON to compare against, paired on the same cases (see --openagent-max-regression)",
    MAX_REGRESSION: "non-inferiority margin: most points of success a scope may lose against the baseline (default: 5)",
    N: "cases per tier of the fixed measurement that gates read (default: 50; it runs when a gate, baseline "
    "or report is set, or when this is given)",
    TIERS: "tiers of the fixed measurement: all, or names/numbers joined by commas (default: all)",
    NAMES: "only these perturbations in the fixed measurement, joined by commas (default: every one of the tiers)",
    MCP_TASKS: "the tasks of the --openagent-mcp server: a JSONL (or YAML) file of task objects (docs/mcp.md)",
    MCP: "an MCP server as the domain 'mcp' (and of the fixed measurement, unless --openagent-domain says "
    "otherwise): 'stdio:COMMAND', 'http://HOST:PORT/mcp' or module:attribute naming an SDK server object",
    DOMAIN: "domain of the fixed measurement: poi, medical, all, a registered or entry-point domain's name, "
    "or module:attribute naming a sandbox.Domain (default: poi)",
    INCONCLUSIVE: "what an INCONCLUSIVE gate does to the session: fail (default) or pass",
    CACHE_DIR: f"folder of the episode cache and the example database (default: {DEFAULT_CACHE_DIR})",
    NO_CACHE: "run every episode afresh (the example database is kept)",
}


def ini_name(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def toml_name(option: str) -> str:
    return option.removeprefix("--openagent-")


@dataclass(frozen=True)
class Options:
    agent: str = "oracle"
    seed: int = 0
    report: Path | None = None
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
    domain: str = "poi"
    mcp: str | None = None
    mcp_tasks: Path | None = None
    inconclusive: str = "fail"

    @property
    def measures(self) -> bool:
        """Whether the session runs the fixed measurement: something reads it, or it was asked for."""
        return bool(self.gate) or self.baseline is not None or self.report is not None or self.n is not None


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("openagent", "robustness of tool-use agents (pytest-openagent)")
    for option, help_text in HELP.items():
        if option == NO_CACHE:
            group.addoption(option, action="store_true", default=None, help=help_text)
            parser.addini(ini_name(option), help_text, type="bool", default=None)
        else:
            group.addoption(option, default=None, metavar=option.removeprefix("--openagent-").upper(), help=help_text)
            parser.addini(ini_name(option), help_text, default=None)


def _pyproject(rootpath: Path) -> dict[str, Any]:
    path = rootpath / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text()).get("tool", {}).get("openagent", {})
    except tomllib.TOMLDecodeError as exc:
        raise pytest.UsageError(f"{path}: not valid TOML ({exc})") from None
    known = [toml_name(o) for o in HELP]
    normalised = {}
    for key, value in table.items():
        name = key.replace("_", "-")
        if name not in known:
            raise pytest.UsageError(f"{path} [tool.openagent]: {did_you_mean('key', key, known)}")
        normalised[name] = value
    return normalised


def resolve(config: pytest.Config) -> Options:
    table = _pyproject(config.rootpath)

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
        except (UsageError, ValueError) as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
    return Options(**values)


Converter = Callable[[Any, Path, dict[str, Any]], dict[str, Any]]
"""``(value, folder relative paths start from, values so far) -> fields of Options``; raises UsageError."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else " ".join(map(str, value))


def _items(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _gate(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.perturbations import names

    return {"gate": tuple(parse_gate(_text(value), known_scopes=names())), "gate_text": _text(value)}


def _baseline(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    return {"baseline": Report.load(base / str(value)), "baseline_path": base / str(value)}


def _n(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{value!r} is not a number of cases per tier (e.g. 50)") from None
    if n < 1:
        raise UsageError(f"{value!r}: give at least 1 case per tier (e.g. 50)")
    return {"n": n}


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


def _domain(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    domain_names(str(value))
    return {"domain": str(value)}


def _mcp_tasks(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    path = base / str(value)
    if not path.is_file():
        raise UsageError(f"{str(value)!r}: no such file; give a JSONL file of tasks for the MCP server (docs/mcp.md)")
    return {"mcp_tasks": path}


def _mcp(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    from sandbox.domains.mcp import NAME, configure

    # Named now (checked, not connected) so that the 'mcp' domain, here and in xdist workers, is this server's.
    configure(str(value), values.get("mcp_tasks"))
    return {"mcp": str(value), "domain": NAME}  # DOMAIN, read next, overrides it where given


def _inconclusive(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if str(value) not in INCONCLUSIVE_POLICIES:
        raise UsageError(did_you_mean("policy", str(value), INCONCLUSIVE_POLICIES))
    return {"inconclusive": str(value)}


def _seed(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, str) and value.strip().lower() == "random":
        return {"seed": random.randrange(2**32)}
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{value!r} is not a seed; give an integer >= 0 or 'random'") from None
    if seed < 0:
        raise UsageError(f"{value!r} is negative; give an integer >= 0 or 'random'")
    return {"seed": seed}


def _no_cache(value: Any, base: Path, values: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"no_cache": value}
    text = str(value).strip().lower()
    if text not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise UsageError(f"{value!r} is not a boolean; use true or false")
    return {"no_cache": text in ("1", "true", "yes", "on")}


CONVERTERS: dict[str, Converter] = {
    AGENT: lambda value, base, values: {"agent": check_spec(str(value))},
    SEED: _seed,
    REPORT: lambda value, base, values: {"report": base / str(value)},
    GATE: _gate,
    BASELINE: _baseline,
    MAX_REGRESSION: lambda value, base, values: {"max_regression": check_margin(value)},
    N: _n,
    TIERS: _tiers,
    NAMES: _names,  # after TIERS: the names are checked against the tiers
    MCP_TASKS: _mcp_tasks,
    MCP: _mcp,  # after MCP_TASKS, before DOMAIN: names the server that the domain 'mcp' is
    DOMAIN: _domain,
    INCONCLUSIVE: _inconclusive,
    CACHE_DIR: lambda value, base, values: {"cache_dir": base / str(value)},
    NO_CACHE: _no_cache,
}
"""How each option's value becomes fields of :class:`Options`, in the order they are read."""
