import importlib.util
import sys
from pathlib import Path

TESTS = Path(__file__).parent.resolve()


def test_the_tests_folder_is_a_package_not_a_path_entry():
    # On sys.path, tests/mcp/ would be found as a namespace package `mcp` wherever the SDK is missing,
    # and every `pytest.importorskip("mcp")` would pass without the extra.
    assert (TESTS / "__init__.py").is_file()
    assert TESTS not in [Path(p or ".").resolve() for p in sys.path]


def test_no_folder_of_tests_shadows_a_top_level_package():
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        spec = importlib.util.find_spec(folder.name)
        if spec is None:
            continue
        places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or ())
        assert not any(TESTS in Path(p).resolve().parents for p in places if p), (folder.name, places)
