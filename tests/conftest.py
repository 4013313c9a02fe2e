import os
from collections.abc import Callable, Iterator

import pytest

from sandbox.case import install_runner
from tests import toys
from tests.loopback import LoopbackServer, Respond

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="also run tests marked slow (CI does)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def cases_run_directly() -> Iterator[None]:
    """Our own tests check the sandbox and the core, not this session's episode cache: ``Case.run``
    runs the episode unless a test installs a runner (a pytester run installs its own session's).
    Without this, a spy agent's second run would be read back from ``.openagent_cache`` unseen."""
    previous = install_runner(None)
    try:
        yield
    finally:
        install_runner(previous)


@pytest.fixture
def toy_perturbations() -> Iterator[None]:
    """Registers the toy perturbations for one test and removes them after, so that tests of the
    real catalogue never see them."""
    toys.register_toys()
    try:
        yield
    finally:
        toys.unregister_toys()


@pytest.fixture
def serve() -> Iterator[Callable[[Respond], LoopbackServer]]:
    """``serve(respond)`` starts a loopback HTTP server (:class:`tests.loopback.LoopbackServer`), closed after the
    test; ``respond(method, path, body)`` gives ``(status, headers, payload)``."""
    servers: list[LoopbackServer] = []

    def start(respond: Respond) -> LoopbackServer:
        servers.append(LoopbackServer(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
