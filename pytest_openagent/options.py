"""The plugin's options: names, help, and their resolution from the command line, ini and ``[tool.openagent]``.

Precedence: command line, then ``[tool.pytest.ini_options]`` (or any pytest ini file), then
``[tool.openagent]`` in the rootdir's ``pyproject.toml``, then the default. Every value is checked
here, so a bad one is a ``pytest.UsageError`` before any test runs.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.errors import UsageError, did_you_mean
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR
from sandbox.evaluation.draw import domain_names, perturbation_classes
from sandbox.evaluation.gate import Criterion, GateError, check_margin, parse_gate
from sandbox.evaluation.report import Report
from sandbox.evaluation.specs import SPEC_HELP, AgentSpecError, check_spec
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
    DOMAIN: "domain of the fixed measurement: poi, medical or all (default: poi)",
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

    values: dict[str, Any] = {}
    value, where, _ = raw(AGENT)
    if value is not None:
        try:
            values["agent"] = check_spec(str(value))
        except AgentSpecError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
    value, where, _ = raw(SEED)
    if value is not None:
        values["seed"] = _seed(value, where)
    value, where, base = raw(REPORT)
    if value:
        values["report"] = base / str(value)
    value, where, _ = raw(GATE)
    if value:
        text = value if isinstance(value, str) else " ".join(map(str, value))
        try:
            from sandbox.perturbations import names

            values["gate"] = tuple(parse_gate(text, known_scopes=names()))
        except GateError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        values["gate_text"] = text
    value, where, base = raw(BASELINE)
    if value:
        path = base / str(value)
        try:
            values["baseline"] = Report.load(path)
        except ValueError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        values["baseline_path"] = path
    value, where, _ = raw(MAX_REGRESSION)
    if value is not None:
        try:
            values["max_regression"] = check_margin(value)
        except UsageError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
    value, where, _ = raw(N)
    if value is not None:
        try:
            values["n"] = int(value)
        except (TypeError, ValueError):
            raise pytest.UsageError(f"{where}: {value!r} is not a number of cases per tier (e.g. 50)") from None
        if values["n"] < 1:
            raise pytest.UsageError(f"{where}: {value!r}: give at least 1 case per tier (e.g. 50)")
    value, where, _ = raw(TIERS)
    if value:
        values["tiers"] = _tiers(value, where)
    value, where, _ = raw(NAMES)
    if value:
        values["names"] = _names(value, where, values.get("tiers", "all"))
    value, where, _ = raw(DOMAIN)
    if value:
        try:
            domain_names(str(value))
        except ValueError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        values["domain"] = str(value)
    value, where, _ = raw(INCONCLUSIVE)
    if value:
        if str(value) not in INCONCLUSIVE_POLICIES:
            raise pytest.UsageError(f"{where}: {did_you_mean('policy', str(value), list(INCONCLUSIVE_POLICIES))}")
        values["inconclusive"] = str(value)
    value, where, base = raw(CACHE_DIR)
    values["cache_dir"] = base / str(value) if value else config.rootpath / DEFAULT_CACHE_DIR
    value, where, _ = raw(NO_CACHE)
    if value is not None:
        values["no_cache"] = _bool(value, where)
    return Options(**values)


def _tiers(value: Any, where: str) -> str | list[str | int]:
    items = value if isinstance(value, list) else str(value).split(",")
    tiers = [int(t) if str(t).strip().isdigit() else str(t).strip() for t in items if str(t).strip()]
    if tiers == ["all"]:
        return "all"
    try:
        normalize_tiers(tiers)
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    return tiers


def _names(value: Any, where: str, tiers: str | list[str | int]) -> tuple[str, ...]:
    items = value if isinstance(value, list) else str(value).split(",")
    names = tuple(str(n).strip() for n in items if str(n).strip())
    try:
        perturbation_classes(tiers, names)
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    return names


def _seed(value: Any, where: str) -> int:
    if isinstance(value, str) and value.strip().lower() == "random":
        return random.randrange(2**32)
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{where}: {value!r} is not a seed; give an integer >= 0 or 'random'") from None
    if seed < 0:
        raise pytest.UsageError(f"{where}: {value!r} is negative; give an integer >= 0 or 'random'")
    return seed


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{where}: {value!r} is not a boolean; use true or false")
