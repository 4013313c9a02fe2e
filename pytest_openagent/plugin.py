"""The pytest plugin (entry point ``openagent``): options, the marker, fixtures and the session.

Thin by design: the session object in :mod:`pytest_openagent.session` does the work, and it starts
only when a run uses the plugin: an option given (every value is then checked before any test runs),
an openagent test collected, or one of its fixtures requested. A run that does none of these loads
neither the sandbox nor Hypothesis on our account. Disable everything with ``-p no:openagent``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_openagent.options import (
    CACHE_KEY,
    DEFAULT_AGENT,
    DEFAULT_CACHE_DIR,
    DEFAULT_SEED,
    WORKER_KEY,
    add_options,
    given,
    header,
)  # fmt: skip

if TYPE_CHECKING:
    from pytest_openagent.session import OpenAgentSession
    from sandbox.case import Case
    from sandbox.perturbations.base import Perturbation

SESSION = "openagent-session"
MARKER = (
    "openagent(tier, names, ...): a robustness test over perturbed cases, "
    "added by @pytest_openagent.perturb; select them with -m openagent"
)
SANDBOX_DEPRECATED = (
    "the 'sandbox' fixture is now called 'make_case' (a parameter named 'sandbox' hides the sandbox "
    "package in the test); rename the parameter, the factory is the same"
)
SANDBOX_WARNED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    if given(config):
        _session(config)


def _session(config: pytest.Config) -> OpenAgentSession:
    """The session, started (options resolved and checked, sandbox loaded) on first use."""
    session = config.pluginmanager.get_plugin(SESSION)
    if session is None:
        from pytest_openagent.resolve import resolve
        from pytest_openagent.session import OpenAgentSession

        session = OpenAgentSession(config, resolve(config))
        config.pluginmanager.register(session, SESSION)
    return session


def pytest_report_header(config: pytest.Config) -> str:
    session = config.pluginmanager.get_plugin(SESSION)
    if session is not None:
        return session.header()
    return header(DEFAULT_AGENT, DEFAULT_SEED, str(config.rootpath / DEFAULT_CACHE_DIR))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("openagent") is not None]
    if marked:
        _session(config).seed_tests(marked)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", {})
    if WORKER_KEY in output or CACHE_KEY in output:
        _session(node.config).worker_done(output)


@pytest.fixture(scope="session")
def agent(pytestconfig: pytest.Config) -> Any:
    """The agent under test, from ``--openagent-agent`` (default ``oracle``)."""
    return _session(pytestconfig).agent


@pytest.fixture
def make_case(pytestconfig: pytest.Config) -> Callable[..., Case]:
    """A factory for hand-written cases: ``make_case(task=None, perturbations=(), domain="poi", family=None, index=0)``.

    ``domain`` is a name, ``module:attribute`` or a :class:`~sandbox.domain.Domain`. ``task`` is a
    :class:`~sandbox.task.Task` or a task id of the test split; without it the
    ``index``-th test task (of ``family`` if given) is taken. ``perturbations`` holds specs or names.
    """
    _session(pytestconfig)  # its runner records and caches the episodes of the cases built here

    def build(
        task: Any = None,
        perturbations: Sequence[Perturbation | str] = (),
        domain: Any = "poi",
        family: str | None = None,
        index: int = 0,
    ) -> Case:
        import sandbox
        from sandbox.case import Case
        from sandbox.errors import UsageError
        from sandbox.perturbations import create

        domain = sandbox.get_domain(domain).name
        pool = sandbox.tasks(domain, "test")
        if task is None:
            matching = [t for t in pool if family is None or t.family == family]
            if not matching:
                families = sorted({t.family for t in pool})
                raise UsageError(f"no test task of family {family!r} in {domain}; families: {', '.join(families)}")
            task = matching[index % len(matching)]
        elif isinstance(task, str):
            found = next((t for t in pool if t.id == task), None)
            if found is None:
                raise UsageError(f"no task {task!r} in the {domain} test split; pass a Task or one of its ids")
            task = found
        return Case(task, tuple(create(p) if isinstance(p, str) else p for p in perturbations))

    return build


@pytest.fixture(scope="session")
def llm_proxy() -> Iterator[Callable[..., str]]:
    """A factory of LLM proxies: ``llm_proxy(upstream, "model_refusal:2@1", ...)`` serves the OpenAI-compatible
    ``upstream`` (``.../v1``) with those model faults, from the start of each conversation, on a loopback port
    until the session ends, and returns its base URL: point an agent's model client at it. (A case that names
    model faults needs none: an ``openai:`` agent and ``tools.model_url`` go through a proxy by themselves.)"""
    from sandbox.proxy.llm import LlmProxy, parse_faults
    from sandbox.proxy.llm_serve import ProxyThread

    started: list[ProxyThread] = []

    def serve(upstream: str, *faults: str, seed: int = 0) -> str:
        proxy = ProxyThread(LlmProxy(upstream, parse_faults(faults, seed))).start()
        started.append(proxy)
        return proxy.url

    yield serve
    for proxy in started:
        proxy.stop()


@pytest.fixture(name="sandbox")
def deprecated_sandbox(request: pytest.FixtureRequest, make_case: Callable[..., Case]) -> Callable[..., Case]:
    """Deprecated alias of ``make_case``: a parameter named ``sandbox`` hides the ``sandbox`` package."""
    if not request.config.stash.get(SANDBOX_WARNED, False):
        request.config.stash[SANDBOX_WARNED] = True
        warnings.warn(SANDBOX_DEPRECATED, DeprecationWarning, stacklevel=1)
    return make_case


@pytest.fixture
def case() -> None:
    """Given by ``@openagent.perturb``; requesting it elsewhere is a mistake worth explaining."""
    raise pytest.UsageError(
        "the 'case' fixture is drawn by @pytest_openagent.perturb(...); decorate the test with it, "
        "or build a case by hand with the 'make_case' fixture"
    )
