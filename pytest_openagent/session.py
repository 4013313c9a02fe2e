"""The session object: it holds the agent, the cache and the records, and writes the report.

Registered as a plugin in ``pytest_configure``. Under pytest-xdist each worker keeps its own
records and sends them to the controller in ``workeroutput``; the controller merges them, so the
report sorts and deduplicates the same records a serial run would have.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import pytest

from pytest_openagent.options import Options
from pytest_openagent.runner import Runner, install
from sandbox.evaluation.cache import EpisodeCache, prepare
from sandbox.evaluation.report import Record, Report

WORKER_KEY = "openagent_records"
SEED_KEY = "openagent_seed"


class OpenAgentSession:
    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        self.records: list[Record] = []
        self._agent: Any = None
        self.report: Report | None = None
        self.failures: list[str] = []
        self.is_worker = hasattr(config, "workerinput")
        if self.is_worker:
            self.options = _with_seed(options, config.workerinput.get(SEED_KEY, options.seed))  # type: ignore[attr-defined]
        episodes = None if options.no_cache else options.cache_dir / "episodes"
        self.cache = EpisodeCache(episodes)
        self.runner = Runner(self.cache, self.records.append)
        from pytest_openagent.decorator import SessionDatabase

        # A session inside a session (pytester) puts the outer one's state back when it ends.
        self._outer_database = SessionDatabase.directory
        SessionDatabase.directory = options.cache_dir / "hypothesis"
        self._outer_runner = install(self.runner)
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
        return self._agent

    def header(self) -> str:
        cache = "off" if self.options.no_cache else str(self.options.cache_dir)
        return f"openagent: agent={self.options.agent}, seed={self.options.seed}, cache={cache}"

    def test_seed(self, item: pytest.Item) -> int:
        from sandbox.seeds import child_seed

        obj = getattr(item, "obj", None)
        return child_seed(self.options.seed, getattr(obj, "__module__", ""), getattr(obj, "__qualname__", item.name))

    # -- hooks -----------------------------------------------------------------------------------

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            obj = getattr(item, "obj", None)
            if item.get_closest_marker("openagent") is not None and getattr(obj, "is_hypothesis_test", False):
                # What hypothesis.seed() sets, without what it also does: drop the example database,
                # which would stop a failure from being replayed on the next run.
                obj._hypothesis_internal_use_seed = self.test_seed(item)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[SEED_KEY] = self.options.seed

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        if not self._prepared and not self.options.no_cache:
            prepare(self.options.cache_dir)
            self._prepared = True
        self.runner.test = item.nodeid
        self.runner.episodes_this_test = []
        try:
            return (yield)
        finally:
            self.cache.flush()
            ran = self.runner.episodes_this_test
            if ran:
                item.user_properties.append(("openagent_episodes", len(ran)))
                item.user_properties.append(("openagent_successes", sum(r.success for r in ran)))
            self.runner.test = ""

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        rows = getattr(node, "workeroutput", {}).get(WORKER_KEY, [])
        self.records.extend(Record.from_dict(r) for r in rows)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.cache.flush()
        if self.is_worker:
            self.config.workeroutput[WORKER_KEY] = [r.to_dict() for r in self.records]  # type: ignore[attr-defined]
            return
        if not self.records:
            return
        meta = {"agent": self.options.agent, "seed": self.options.seed, "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        from sandbox.case import SANDBOX_VERSION

        meta["sandbox_version"] = SANDBOX_VERSION
        self.report = report = Report(self.records, meta)
        if self.options.report is not None:
            report.to_json(self.options.report)
        self._junit_properties(report)
        if self.options.gate:
            from sandbox.evaluation.gate import check

            self.failures += check(report, self.options.gate).failures
        if self.options.baseline is not None:
            self.failures += report.compare(self.options.baseline, self.options.max_regression).failures
        if self.failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _junit_properties(self, report: Report) -> None:
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pragma: no cover - pytest internals moved
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        for row in report.rows():
            if row.kind == "perturbation":
                continue
            xml.add_global_property(f"openagent.{row.scope}.episodes", row.episodes)
            xml.add_global_property(f"openagent.{row.scope}.success", f"{row.perturbed.value:.4f}")
            if row.kind != "clean":
                xml.add_global_property(f"openagent.{row.scope}.delta", f"{row.delta.points:.2f}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.report is None:
            return
        tr = terminalreporter
        n = len(self.report.records)
        tr.write_sep("=", f"openagent: {n} episodes, agent={self.options.agent}, seed={self.options.seed}")
        tr.write_line(self.report.table())
        if self.options.report is not None:
            tr.write_line(f"report written to {self.options.report}")
        if self.options.gate or self.options.baseline is not None:
            if self.failures:
                tr.write_line("openagent gate failed:", red=True, bold=True)
                for failure in self.failures:
                    tr.write_line(f"  {failure}", red=True)
            else:
                what = " and ".join(
                    filter(None, [self.options.gate_text, self.options.baseline is not None and "baseline"])
                )
                tr.write_line(f"openagent gate passed: {what}", green=True)

    def pytest_unconfigure(self) -> None:
        from pytest_openagent.decorator import SessionDatabase

        install(self._outer_runner)
        SessionDatabase.directory = self._outer_database


def _with_seed(options: Options, seed: int) -> Options:
    from dataclasses import replace

    return replace(options, seed=int(seed))
