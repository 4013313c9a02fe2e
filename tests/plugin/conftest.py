import pytest

from tests import toys


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's project: the toys as its conftest (agent spec ``conftest:Fragile``) and no pytest cache."""
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester
