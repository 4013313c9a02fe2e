# As in tests/plugin/conftest.py: pytester's in-process runs unload the modules first imported during a run, so
# Hypothesis' database and the decorator are loaded here, once, before any run.
import hypothesis.database  # noqa: F401

import pytest_openagent.decorator  # noqa: F401
