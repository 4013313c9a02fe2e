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

from sandbox.domain import did_you_mean
from sandbox.evaluation.cache import DEFAULT_CACHE_DIR
from sandbox.evaluation.gate import Criterion, GateError, parse_gate
from sandbox.evaluation.report import Report
from sandbox.evaluation.specs import SPEC_HELP, AgentSpecError, check_spec

AGENT = "--openagent-agent"
SEED = "--openagent-seed"
REPORT = "--openagent-report"
GATE = "--openagent-gate"
BASELINE = "--openagent-baseline"
MAX_REGRESSION = "--openagent-max-regression"
CACHE_DIR = "--openagent-cache-dir"
NO_CACHE = "--openagent-no-cache"

HELP = {
    AGENT: f"agent under test: {SPEC_HELP} (default: oracle)",
    SEED: "seed of every openagent test's examples, an int or 'random' (default: 0)",
    REPORT: "write the robustness report as JSON to this path",
    GATE: "fail the session unless the report meets these criteria, e.g. 'clean.success>=0.95 perception.delta>=-10'",
    BASELINE: "a report JSON to compare against (see --openagent-max-regression)",
    MAX_REGRESSION: "most points of success a tier may lose against the baseline (default: 5)",
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
            values["max_regression"] = float(value)
        except (TypeError, ValueError):
            raise pytest.UsageError(f"{where}: {value!r} is not a number of points (e.g. 5)") from None
        if values["max_regression"] < 0:
            raise pytest.UsageError(f"{where}: {value!r} is negative; give the most points a tier may lose, e.g. 5")
    value, where, base = raw(CACHE_DIR)
    values["cache_dir"] = base / str(value) if value else config.rootpath / DEFAULT_CACHE_DIR
    value, where, _ = raw(NO_CACHE)
    if value is not None:
        values["no_cache"] = _bool(value, where)
    return Options(**values)


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
