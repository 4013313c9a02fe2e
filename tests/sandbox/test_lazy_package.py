"""``import sandbox`` loads no world and none of the public names' modules; each name loads when first read."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_sandbox_builds_no_world_and_loads_no_model_code():
    code = "import sys, sandbox; print(sorted(m for m in sys.modules if m.startswith(('sandbox.', 'pydantic'))))"
    loaded = _run(code)
    assert loaded == "[]"


def test_every_public_name_is_there_and_a_world_is_built_when_first_read():
    code = (
        "import sys, sandbox; names = [getattr(sandbox, n) for n in sandbox.__all__]; "
        "print('sandbox.domains.poi.domain' in sys.modules, list(sandbox.DOMAINS)); "
        "print(sandbox.tasks('poi', 'test', 1)[0].id.startswith('poi-'), 'sandbox.domains.poi.domain' in sys.modules)"
    )
    assert _run(code).splitlines() == ["False ['poi', 'medical']", "True True"]


def test_a_submodule_that_shares_a_public_name_does_not_hide_it():
    import sandbox.judge  # the module of the same name, imported after the package

    assert callable(sandbox.judge) and sandbox.judge.__module__ == "sandbox.judge"
    assert sandbox.perturbations.get("query_paraphrase") is not None
    assert set(sandbox.__all__) <= set(dir(sandbox))
