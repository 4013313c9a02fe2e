import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import toys


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
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's project: the toys as its conftest (agent spec ``conftest:Fragile``) and no pytest cache."""
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester
