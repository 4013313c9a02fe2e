"""Nothing heavy loads where it need not (the arrows between layers: tests/test_imports.py)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loaded(code: str) -> set[str]:
    probe = f"import sys; {code}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return set(out.split())


def test_the_evaluation_core_imports_neither_pytest_nor_hypothesis():
    loaded = _loaded("import sandbox, sandbox.evaluation, sandbox.evaluation.specs, sandbox.audits.check_domain")
    assert not loaded & {"pytest", "_pytest", "hypothesis", "torch", "transformers", "pytest_openagent"}


def test_no_mcp_library_loads_until_an_mcp_server_is_asked_for():
    loaded = _loaded(
        "import sandbox, sandbox.domains, sandbox.domains.mcp, sandbox.proxy.server, sandbox.proxy.serve, "
        "sandbox.agents.mcp, sandbox.evaluation, pytest_openagent, "
        "pytest_openagent.plugin, pytest_openagent.options, pytest_openagent.cli"
    )
    assert not loaded & {"mcp", "mcp_types", "fastmcp", "anyio", "uvicorn", "starlette"}


FRAMEWORKS = {"langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "openai"}
"""The agent frameworks the adapters hand tools to (and the OpenAI SDK the Agents SDK brings)."""


def test_no_agent_framework_loads_until_an_adapter_is_called():
    loaded = _loaded(
        "import sandbox, sandbox.agents, sandbox.agents.loop, sandbox.agents.frameworks, "
        "sandbox.agents.frameworks.played, sandbox.evaluation, pytest_openagent, pytest_openagent.plugin, "
        "pytest_openagent.cli"
    )
    assert not loaded & FRAMEWORKS
