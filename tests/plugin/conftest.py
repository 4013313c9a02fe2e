# pytester's in-process runs unload every module first imported during the run. The plugin loads Hypothesis and
# the decorator lazily, so whichever run came first would otherwise leave classes behind that the next run's
# fresh imports do not recognise (``SessionDatabase`` no longer an ``ExampleDatabase``): load them here, once.
import hypothesis.database  # noqa: F401
import pytest

import pytest_openagent.decorator  # noqa: F401
from tests import toys


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's project: the toys as its conftest (agent spec ``conftest:Fragile``) and no pytest cache."""
    pytester.makeconftest(toys.CONFTEST)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester
