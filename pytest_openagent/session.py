"""The session object: it holds the agent, the cache and the records, measures, gates and writes the report.

Registered as a plugin in ``pytest_configure``. Two kinds of figures, kept apart:

- the **search**: the episodes the property tests ran. Hypothesis decides which (it stops at a
  failure, shrinks toward failures and replays a saved failure first), so these figures are shown
  and never gated;
- the **measurement**: a fixed sample drawn from the seed before any outcome is seen (``n`` cases per
  tier and their clean twins, as ``openagent eval`` draws), identical on every run. Gates and the
  baseline comparison read only this. It runs at the end of the session when a gate, a baseline,
  a report, an HTML page or a plot is asked for, or ``--openagent-n`` is given.

Under pytest-xdist each worker keeps its own search records and sends them to the controller in
``workeroutput``; the controller merges them and runs the measurement.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Generator
from types import TracebackType
from typing import Any

import pytest

from pytest_openagent.options import CACHE_DIR, CACHE_KEY, FAILURES_KEY, NO_CACHE, SEED_KEY, WORKER_KEY, header
from pytest_openagent.resolve import Options
from sandbox.agent import fingerprint
from sandbox.case import install_runner
from sandbox.errors import OpenAgentError, UsageError
from sandbox.evaluation.cache import EpisodeCache, check_folder, prepare
from sandbox.evaluation.cost import cost_rows, cost_table
from sandbox.evaluation.gate import GateResult, check, compare
from sandbox.evaluation.report import Failure, Record, Report
from sandbox.evaluation.runner import Runner, WorldFailed
from sandbox.evaluation.worst_case import WorstCase, worst_table
from sandbox.perturbations.base import TIERS

DEFAULT_N = 50
GATE_TEST = "openagent::gate"
"""The test case a JUnit XML file gets for the gate's verdict."""


def _runs_agents(item: pytest.Item) -> bool:
    """Whether a test may run episodes: one of ours (the marker), or one that asks for the agent."""
    return item.get_closest_marker("openagent") is not None or "agent" in getattr(item, "fixturenames", ())


def _unsatisfied(exc: BaseException) -> bool:
    """Whether ``exc`` is Hypothesis' ``Unsatisfiable``: no example met the test's assumptions."""
    from hypothesis.errors import Unsatisfiable

    return isinstance(exc, Unsatisfiable)


def _without_wrappers(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without the frames of ``@openagent.perturb``'s wrapper (its own, and the one Hypothesis builds in its
    place), so that a failing test's traceback starts in the test; ``--fulltrace`` keeps them."""
    from pytest_openagent import decorator

    frames = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename != decorator.__file__:
            frames.append(tb)
        tb = tb.tb_next
    for earlier, later in itertools.pairwise([*frames, None]):
        earlier.tb_next = later  # type: ignore[union-attr]  # earlier is a frame: only the last later is None
    return frames[0] if frames else None


class OpenAgentSession:
    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        self.records: list[Record] = []
        self.failures: dict[str, Failure] = {}
        """The case each failed test ended on (Hypothesis' shrunk example), by test id."""
        self.written: list[str] = []
        """What the session wrote besides the JSON report (the HTML page, the figure), for the summary."""
        self.episodes = {"run": 0, "cached": 0}
        """Search episodes run and served from the cache, over this process and its xdist workers."""
        self._agent: Any = None
        self._agent_fingerprint: str | None = None
        self.search: Report | None = None
        self.budget_ended: dict[str, int] = {}
        """Tests whose episode budget (``max_episodes``) ended their search, with the new episodes they ran."""
        self.report: Report | None = None
        self.gate: GateResult | None = None
        self.problem: str | None = None
        """Why the session could not measure (a broken agent), if it could not."""
        self.is_worker = hasattr(config, "workerinput")
        if self.is_worker:
            self.options = _with_seed(options, config.workerinput.get(SEED_KEY, options.seed))  # type: ignore[attr-defined]  # xdist's workerinput/workeroutput, set on a worker's config only
        episodes = None if options.no_cache else options.cache_dir / "episodes"
        self.cache = EpisodeCache(episodes)
        self.runner = Runner(self.cache, self.records.append, options.max_steps)
        from pytest_openagent.decorator import Search, SessionDatabase, SessionDrift

        # A session inside a session (pytester) puts the outer one's state back when it ends.
        self._outer_database, self._outer_drift = SessionDatabase.directory, SessionDrift.on
        SessionDatabase.directory = options.cache_dir / "hypothesis"
        SessionDrift.on = options.drift
        self._outer_search = (Search.mode, Search.seed)
        Search.mode, Search.seed = self.options.search, self.options.seed
        self._outer_runner = install_runner(self.runner)
        self._prepared = False

    # -- what fixtures and hooks ask for ---------------------------------------------------------

    @property
    def agent(self) -> Any:
        if self._agent is None:
            from sandbox.evaluation.specs import AgentSpecError, load_agent

            try:
                self._agent = load_agent(self.options.agent)
            except AgentSpecError as exc:
                raise pytest.UsageError(f"--openagent-agent: {exc}") from None
            self._agent_fingerprint = fingerprint(self._agent)
        return self._agent

    def header(self) -> str:
        cache = "off" if self.options.no_cache else str(self.options.cache_dir)
        return header(self.options.agent, self.options.seed, cache)

    def test_seed(self, item: pytest.Item) -> int:
        from sandbox.seeds import child_seed

        obj = getattr(item, "obj", None)
        return child_seed(self.options.seed, getattr(obj, "__module__", ""), getattr(obj, "__qualname__", item.name))

    # -- hooks -----------------------------------------------------------------------------------

    def seed_tests(self, items: list[pytest.Item]) -> None:
        """Give each openagent test its seed (the plugin calls this for the tests collected with the marker)."""
        for item in items:
            obj = getattr(item, "obj", None)
            if obj is not None and getattr(obj, "is_hypothesis_test", False):
                # What hypothesis.seed() sets, without what it also does: drop the example database,
                # which would stop a failure from being replayed on the next run.
                obj._hypothesis_internal_use_seed = self.test_seed(item)
        if not self.options.no_cache and any(map(_runs_agents, items)):  # a session of other tests needs no cache
            try:
                check_folder(self.options.cache_dir)
            except UsageError as exc:
                raise pytest.UsageError(f"{CACHE_DIR}: {exc} ({NO_CACHE})") from None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[SEED_KEY] = self.options.seed

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        __tracebackhide__ = True
        if not self._prepared and not self.options.no_cache and _runs_agents(item):
            prepare(self.options.cache_dir)
            self._prepared = True
        self.runner.begin(item.nodeid)
        try:
            return (yield)
        except Exception as exc:
            if isinstance(exc, WorldFailed):  # the world's failure, not the agent's: no verdict on the agent
                self.problem = str(exc)
                item.session.shouldstop = f"openagent: {exc}"
                raise
            if self.runner.budget_spent and _unsatisfied(exc):
                raise pytest.skip.Exception(
                    f"openagent: the episode budget (max_episodes) was spent after {self.runner.new_this_test} new "
                    "episodes before any case met the test's assumptions (an invariant: a task the agent solves "
                    "clean): nothing was checked; a rerun goes on from the cache, or raise max_episodes"
                ) from None
            if not self.config.getoption("fulltrace", False):
                exc.__traceback__ = _without_wrappers(exc.__traceback__)
            ran = self.runner.episodes_this_test
            if ran and self.runner.last is not None:  # the last case run: the example Hypothesis failed on, shrunk
                self.failures[item.nodeid] = Failure(ran[-1], self.runner.last.explain())
            raise
        finally:
            self.cache.flush()
            ran = self.runner.episodes_this_test
            if self.runner.budget_spent:
                self.budget_ended[item.nodeid] = self.runner.new_this_test
            if ran:
                item.user_properties.append(("openagent_episodes", len(ran)))
                item.user_properties.append(("openagent_successes", sum(r.success for r in ran)))
            self.runner.test = ""
            failure = self.runner.health.failure()
            if failure is not None:
                self.problem = failure
                item.session.shouldstop = f"openagent: {failure}"

    def worker_done(self, output: dict[str, Any]) -> None:
        """Take what an xdist worker sent (the plugin calls this as each worker ends)."""
        self.records.extend(Record.from_dict(r) for r in output.get(WORKER_KEY, []))
        for data in output.get(FAILURES_KEY, []):
            failure = Failure.from_dict(data)
            self.failures[failure.record.test] = failure
        for key, count in output.get(CACHE_KEY, {}).items():
            self.episodes[key] += count

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.cache.flush()
        self.episodes["run"] += self.cache.misses
        self.episodes["cached"] += self.cache.hits
        if self.is_worker:
            self.config.workeroutput[WORKER_KEY] = [r.to_dict() for r in self.records]  # type: ignore[attr-defined]  # xdist's workerinput/workeroutput, set on a worker's config only
            self.config.workeroutput[CACHE_KEY] = self.episodes  # type: ignore[attr-defined]  # xdist's workerinput/workeroutput, set on a worker's config only
            self.config.workeroutput[FAILURES_KEY] = [f.to_dict() for f in self.failures.values()]  # type: ignore[attr-defined]  # xdist's workerinput/workeroutput, set on a worker's config only
            return
        from sandbox.case import SANDBOX_VERSION

        meta = {
            "agent": self.options.agent, "seed": self.options.seed, "sandbox_version": SANDBOX_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }  # fmt: skip
        if self.records:
            counts = {"episodes_run": self.episodes["run"], "episodes_cached": self.episodes["cached"]}
            self.search = Report(self.records, {**meta, **counts, "kind": "search"})
        if self.options.measures and self.problem is None:
            self.report = self._measure(meta)
        elif not self.options.measures:
            self.report = self.search
        failures = [self.failures[test] for test in sorted(self.failures)]
        for report in (self.search, self.report):
            if report is not None:
                report.failures = failures
        if self.options.search == "worst" and self.search is not None and self.problem is None:
            worst = self._worst()
            for report in {id(r): r for r in (self.search, self.report) if r is not None}.values():
                report.worst = worst
        if self.report is not None and self.report is not self.search:
            if self.options.report is not None:
                self.report.to_json(self.options.report)
            self._check_gates(self.report)
        self._write_pages(self.report or self.search)
        self._junit(self.report or self.search)
        if self.gate is not None and not self._gate_passes(self.gate) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.problem is not None and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.INTERRUPTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # our own stop: a failed run, not a Ctrl-C

    def _measure(self, meta: dict[str, Any]) -> Report | None:
        """The fixed sample, through the session's cache folder; ``None`` if the agent is broken."""
        from sandbox.evaluation.evaluate import evaluate

        options = self.options
        try:
            report = evaluate(
                self.agent, options.tiers, n=options.n or DEFAULT_N, seed=options.seed, domain=options.domain,
                names=options.names, cache_dir=None if options.no_cache else options.cache_dir,
                max_steps=options.max_steps, drift=options.drift, families=options.families,
                sequential=options.gate if options.sequential else None,
            )  # fmt: skip
        except OpenAgentError as exc:
            self.problem = str(exc)
            return None
        report.meta = {**report.meta, **meta, "kind": "measurement"}
        if options.prices:
            report.meta["prices"] = {model: list(price) for model, price in options.prices.items()}
        report.search = self.search
        return report

    def _worst(self) -> list[WorstCase]:
        """The worst case per tier that the property tests found (``--openagent-search worst``): of each tier, the
        test whose case hurt its agent most, and the last failure that test saw (Hypothesis replays its shrunk
        failure last). Its stack's neighbourhood runs where that agent is the session's."""
        from sandbox.evaluation.degradation import Found, worst_case

        found: dict[tuple[str, str], Found] = {}
        for record in self.records:  # in the order they ran
            if record.tier is not None:
                found.setdefault((record.tier, record.test), Found()).add(record)
        out = []
        for tier in TIERS:
            tests = [f for (t, _), f in found.items() if t == tier]
            if not tests:
                continue
            best = max(tests, key=lambda f: (f.score, f.failure is not None))
            runner = None
            if best.worst is not None and best.worst.agent == self._agent_id():
                runner = Runner(self.cache, max_steps=self.options.max_steps)
            worst = worst_case(best, tier, self._agent, runner, seed=self.options.seed, search=best.worst.test)  # type: ignore[union-attr]  # a found entry carries its worst record
            if worst is not None:
                out.append(worst)
        self.cache.flush()
        return out

    def _agent_id(self) -> str | None:
        """The session agent's fingerprint, loading it if the tests did not; ``None`` if it cannot be loaded."""
        try:
            self.agent  # noqa: B018 - loads the agent and its fingerprint
        except pytest.UsageError:
            return None
        return self._agent_fingerprint

    def _check_gates(self, report: Report) -> None:
        result = GateResult()
        if self.options.gate:
            result += check(report, self.options.gate)
        if self.options.baseline is not None:
            result += compare(report, self.options.baseline, self.options.max_regression)
        if result.checks:
            self.gate = result

    def _write_pages(self, report: Report | None) -> None:
        """The HTML page and the sensitivity figure, where asked for (of the search when nothing was measured)."""
        from sandbox.evaluation.html_report import write_pages

        if report is not None:
            self.written = write_pages(report, self.options.html, self.options.plot, self.gate, self.options.baseline)

    def _gate_passes(self, result: GateResult) -> bool:
        return result.verdict == "PASS" or (result.verdict == "INCONCLUSIVE" and self.options.inconclusive == "pass")

    def _junit_xml(self) -> Any:
        """pytest's JUnit XML writer if ``--junitxml`` is given: the plugin that takes global properties
        (pytest keeps it under a private stash key, so it is found by what it does)."""
        for plugin in self.config.pluginmanager.get_plugins():
            if callable(getattr(plugin, "add_global_property", None)) and callable(
                getattr(plugin, "pytest_runtest_logreport", None)
            ):
                return plugin
        return None

    def _junit(self, report: Report | None) -> None:
        xml = self._junit_xml()
        if xml is None:
            return
        for row in report.rows() if report is not None else []:
            if row.kind == "perturbation":
                continue
            xml.add_global_property(f"openagent.{row.scope}.episodes", row.episodes)
            xml.add_global_property(f"openagent.{row.scope}.success", f"{row.perturbed.value:.4f}")
            if row.kind != "clean":
                xml.add_global_property(f"openagent.{row.scope}.delta", f"{row.delta.points:.2f}")
        if report is not None and report is not self.search:
            for cost in cost_rows(report):
                for key, value in cost.to_dict().items():
                    if key != "scope" and value is not None:
                        xml.add_global_property(f"openagent.cost.{cost.scope}.{key}", value)
            if isinstance(report.meta.get("wall_s"), int | float):
                xml.add_global_property("openagent.cost.wall_s", report.meta["wall_s"])
        if self.gate is None and self.problem is None:
            return
        passed = self.problem is None and self.gate is not None and self._gate_passes(self.gate)
        text = self.problem if self.problem is not None else self.gate.message()  # type: ignore[union-attr]  # no problem means a gate (returned above otherwise)
        location = ("openagent", None, "gate")
        for when, outcome in (("call", "passed" if passed else "failed"), ("teardown", "passed")):
            longrepr = None if outcome == "passed" else text
            xml.pytest_runtest_logreport(pytest.TestReport(GATE_TEST, location, {}, outcome, longrepr, when))  # type: ignore[arg-type]  # outcome and when are the literal pairs above, inferred as str

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or (self.report is None and self.problem is None):
            return
        tr = terminalreporter
        agents = sorted({r.agent for r in self.search.records}) if self.search is not None else []
        shown = [self._name(a) for a in agents]
        if (self.report is not None and self.report is not self.search) or not shown:
            shown.append(self.options.agent)  # the measurement's agent, or the one a broken run could not measure
        shown = list(dict.fromkeys(shown))
        who = f"agent={shown[0]}" if len(shown) == 1 else f"agents={', '.join(shown)}"
        tr.write_sep("=", f"openagent: {who}, seed={self.options.seed}")
        if self.search is not None:
            meta = self.search.meta
            tr.write_line(f"search: {meta['episodes_run']} episodes run, {meta['episodes_cached']} from the cache")
            for agent in agents:
                records = [r for r in self.search.records if r.agent == agent]
                who = f", agent {self._name(agent)}" if len(shown) > 1 else ""
                tr.write_line(
                    f"search: {len(records)} cases the property tests explored{who} (not gated: Hypothesis chose them)"
                )
                tr.write_line(Report(records).table())
            for test, spent in self.budget_ended.items():
                tr.write_line(
                    f"search: {test} spent its episode budget (max_episodes) after {spent} new episodes and ended "
                    "there; a rerun goes on from the cache and the example database"
                )
            if self.search.worst and self.report is self.search:
                ran = {r.agent for r in self.search.records}  # the means of one agent, or of none
                means = {row.scope: row.perturbed for row in self.search.rows() if row.kind == "tier" and len(ran) == 1}
                tr.write_line(worst_table(self.search.worst, means, ran))
        if self.report is not None and self.report is not self.search:
            meta = self.report.meta
            if len(shown) > 1:
                tr.write_line(f"measurement: of agent {self.options.agent} (--openagent-agent)")
            tr.write_line(
                f"measurement: {meta['n']} cases per tier and their clean twins, seed {meta['seed']}, "
                f"domain {meta['domain']} (what gates read); {meta['episodes_run']} episodes run, "
                f"{meta['episodes_cached']} from the cache"
            )
            tr.write_line(self.report.table())
            tr.write_line("measurement: what it cost")
            tr.write_line(cost_table(self.report))
            tr.write_line("measurement: success against severity (s=0: the same tasks clean)")
            tr.write_line(self.report.sensitivity_table())
            if self.report.detection():
                tr.write_line("measurement: noticed apart from recovered (cases that met a fault)")
                tr.write_line(self.report.detection_table())
            if self.options.report is not None:
                tr.write_line(f"report written to {self.options.report}")
        for line in self.written:
            tr.write_line(line)
        if self.problem is not None:
            tr.write_line(f"openagent: no measurement: {self.problem}", red=True, bold=True)
        if self.gate is not None:
            passes = self._gate_passes(self.gate)
            tr.write_line(self.gate.message().splitlines()[0], green=passes, red=not passes, bold=True)
            for check in self.gate.checks:
                tr.write_line(
                    f"  {check.verdict:<12} {check}", green=check.verdict == "PASS", red=check.verdict != "PASS"
                )
            if self.gate.verdict == "INCONCLUSIVE":
                policy = self.options.inconclusive
                tr.write_line(
                    f"  inconclusive counts as {policy} (--openagent-inconclusive); a larger --openagent-n narrows the "
                    "intervals"
                )

    def _name(self, agent_fingerprint: str) -> str:
        """An agent of the records by its spec where it is the configured agent, else by its fingerprint."""
        return self.options.agent if agent_fingerprint == self._agent_fingerprint else agent_fingerprint

    def pytest_unconfigure(self) -> None:
        from pytest_openagent.decorator import Search, SessionDatabase, SessionDrift

        install_runner(self._outer_runner)
        SessionDatabase.directory = self._outer_database
        SessionDrift.on = self._outer_drift
        Search.mode, Search.seed = self._outer_search


def _with_seed(options: Options, seed: int) -> Options:
    from dataclasses import replace

    return replace(options, seed=int(seed))
