"""The plugin's options: names, help, and whether a run gives any of them.

Imported by every pytest run in which the plugin is installed, so it imports nothing of the sandbox
or Hypothesis: :mod:`pytest_openagent.resolve` reads and checks the values, once a run uses them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

AGENT = "--openagent-agent"
SEED = "--openagent-seed"
REPORT = "--openagent-report"
HTML = "--openagent-html"
PLOT = "--openagent-plot"
GATE = "--openagent-gate"
BASELINE = "--openagent-baseline"
MAX_REGRESSION = "--openagent-max-regression"
SEQUENTIAL = "--openagent-sequential"
PRICE = "--openagent-price"
CACHE_DIR = "--openagent-cache-dir"
NO_CACHE = "--openagent-no-cache"
N = "--openagent-n"
TIERS = "--openagent-tiers"
NAMES = "--openagent-names"
FAMILIES = "--openagent-families"
DOMAIN = "--openagent-domain"
MCP = "--openagent-mcp"
MCP_TASKS = "--openagent-mcp-tasks"
MCP_RESET = "--openagent-mcp-reset"
MCP_INSPECT = "--openagent-mcp-inspect"
MCP_ROLES = "--openagent-mcp-roles"
INCONCLUSIVE = "--openagent-inconclusive"
MAX_STEPS = "--openagent-max-steps"
DRIFT = "--openagent-drift"
SEARCH = "--openagent-search"
INCONCLUSIVE_POLICIES = ("fail", "pass")
SEARCHES = ("default", "worst")
"""``--openagent-search``: ``default`` looks for a failure; ``worst`` also climbs toward the worst one."""

DEFAULT_AGENT = "oracle"
DEFAULT_SEED = 0
DEFAULT_CACHE_DIR = Path(".openagent_cache")
"""``sandbox.evaluation.cache.DEFAULT_CACHE_DIR``, written out so that loading the plugin loads no sandbox
(``tests/plugin/test_startup.py`` checks that the two agree)."""
SPEC_HELP = "oracle, static, module:callable, openai:MODEL@URL or hf:PATH"
"""``sandbox.evaluation.specs.SPEC_HELP``, written out for the same reason."""

WORKER_KEY = "openagent_records"
CACHE_KEY = "openagent_cache"
SEED_KEY = "openagent_seed"
FAILURES_KEY = "openagent_failures"
"""What an xdist worker sends its controller (``workeroutput``) and what the controller sends a worker."""

HELP = {
    AGENT: f"agent under test: {SPEC_HELP} (default: {DEFAULT_AGENT})",
    SEED: f"seed of every openagent test's examples, an int or 'random' (default: {DEFAULT_SEED})",
    REPORT: "write the robustness report as JSON to this path",
    HTML: "write the report as one self-contained HTML page to this path (tables, verdicts, figures, failing cases)",
    PLOT: "draw the sensitivity curves (success against severity per perturbation) as a PNG at this path "
    "(needs the plot extra)",
    GATE: "fail the session unless the measurement meets these criteria (verdicts from 95% intervals), "
    "e.g. 'clean.success>=0.95 perception.delta>=-10', or 'default'",
    BASELINE: "a report JSON to compare against, paired on the same cases (see --openagent-max-regression)",
    MAX_REGRESSION: "non-inferiority margin: most points of success a scope may lose against the baseline (default: 5)",
    SEQUENTIAL: "run the fixed measurement in rounds and stop each --openagent-gate criterion once an anytime-valid "
    "interval (a confidence sequence) settles its verdict, or at the fixed n; needs --openagent-gate",
    N: "cases per tier of the fixed measurement that gates read (default: 50; it runs when a gate, baseline, "
    "report, HTML page or plot is set, or when this is given)",
    TIERS: "tiers of the fixed measurement: all, or names/numbers joined by commas (default: all)",
    NAMES: "only these perturbations in the fixed measurement, joined by commas (default: every one of the tiers)",
    MCP_TASKS: "the tasks of the --openagent-mcp server: a JSONL (or YAML) file of task objects (docs/mcp.md)",
    MCP_RESET: "how the --openagent-mcp server is brought back to its first state between episodes, verified "
    "before use: auto (default), restart, tool:NAME, none (the writes do not matter) or module:function",
    MCP_INSPECT: "how to read the --openagent-mcp server's state for end states: tool:NAME or module:function",
    MCP_ROLES: "roles of the --openagent-mcp server's tools: tool=role pairs joined by commas (lookup, write, wait)",
    MCP: "an MCP server as the domain 'mcp' (and of the fixed measurement, unless --openagent-domain says "
    "otherwise): 'stdio:COMMAND', 'http://HOST:PORT/mcp' or module:attribute naming an SDK server object",
    DOMAIN: "domain of the fixed measurement: poi, medical, all, a registered or entry-point domain's name, "
    "or module:attribute naming a sandbox.Domain (default: poi)",
    FAMILIES: "only tasks of these task families in the fixed measurement, joined by commas (default: every one)",
    INCONCLUSIVE: "what an INCONCLUSIVE gate does to the session: fail (default) or pass",
    MAX_STEPS: "step limit of every episode, in tests and the fixed measurement (default: each case's own, the "
    "plan's length plus what its perturbations add)",
    DRIFT: "drift cases: perturbations of the tool surface and of interaction start after turn k (an onset drawn "
    "and shrunk) in @openagent.perturb tests that leave drift unset, and the fixed measurement draws them beside "
    "the static cases (rows <tier>-drift)",
    SEARCH: "how property tests search: default (a failure, shrunk) or worst (Hypothesis' target() climbs toward "
    "the cases that hurt the agent most; the report gives the worst case per tier and how often its stack "
    "fails on the other tasks of its family, gated as worst.TIER.success)",
    PRICE: "prices of the agent's model per million prompt and completion tokens, MODEL=PROMPT/COMPLETION (e.g. "
    "'gpt-4o-mini=0.15/0.60'); the report then gives what the measurement cost in money beside its tokens",
    CACHE_DIR: f"folder of the episode cache and the example database (default: {DEFAULT_CACHE_DIR})",
    NO_CACHE: "run every episode afresh (the example database is kept)",
}


TOML_ALIASES = {"prices": "price"}
"""Other spellings ``[tool.openagent]`` takes: ``prices`` reads better for a table of them."""


def ini_name(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def toml_name(option: str) -> str:
    return option.removeprefix("--openagent-")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("openagent", "robustness of tool-use agents (pytest-openagent)")
    for option, help_text in HELP.items():
        # argparse %-formats an option's help (pytest --help); the ini help is printed as is.
        escaped = help_text.replace("%", "%%")
        if option in (NO_CACHE, DRIFT, SEQUENTIAL):
            group.addoption(option, action="store_true", default=None, help=escaped)
            parser.addini(ini_name(option), help_text, type="bool", default=None)
        else:
            group.addoption(option, default=None, metavar=option.removeprefix("--openagent-").upper(), help=escaped)
            parser.addini(ini_name(option), help_text, default=None)


def pyproject(rootpath: Path) -> dict[str, Any]:
    """``[tool.openagent]`` of the rootdir's ``pyproject.toml``, keys as option names; a usage error on a bad key."""
    path = rootpath / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        tool = tomllib.loads(path.read_text()).get("tool", {})
    except tomllib.TOMLDecodeError as exc:
        raise pytest.UsageError(f"{path}: not valid TOML ({exc})") from None
    table = tool.get("openagent", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise pytest.UsageError(
            f'{path}: [tool.openagent] must be a table of options (agent = "oracle"...), got '
            f"openagent = {table!r} under [tool]; write the options under a [tool.openagent] header"
        )
    known = [toml_name(o) for o in HELP]
    normalised = {}
    for key, value in table.items():
        name = TOML_ALIASES.get(key.replace("_", "-"), key.replace("_", "-"))
        if name not in known:
            from sandbox.errors import did_you_mean

            raise pytest.UsageError(f"{path} [tool.openagent]: {did_you_mean('key', key, known)}")
        normalised[name] = value
    return normalised


def given(config: pytest.Config) -> bool:
    """Whether the run sets any option, on the command line, in an ini file or in ``[tool.openagent]``."""
    for option in HELP:
        if config.getoption(option) is not None or config.getini(ini_name(option)) not in (None, "", []):
            return True
    return bool(pyproject(config.rootpath))


def header(agent: str, seed: int, cache: str) -> str:
    """The line pytest prints under its own header: the agent is the ``agent`` fixture's (and the measurement's), not
    necessarily the one a test runs (``case.run(my_agent)``); the summary names every agent that ran."""
    return f"openagent: agent fixture={agent}, seed={seed}, cache={cache}"
