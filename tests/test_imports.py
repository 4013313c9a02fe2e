"""The import graph of sandbox, pytest_openagent and training: the layers' arrows point down, no cycle, no import
of another module's private names.

Built with ``ast`` from the source, nothing imported. Both checks count every import: at module
level, under ``if TYPE_CHECKING:``, and inside functions (a lazy import that closes a cycle hides the
tangle from the interpreter, not from a reader). ``from package import module`` is an edge to the module
only: a package's ``__init__`` that imports its submodules is no cycle with them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sandbox", "pytest_openagent", "training")

KNOWN_CYCLES: list[list[str]] = []
"""Cycles still to break, each as its sorted modules; this list may only shrink (it is empty: keep it so)."""
KNOWN_PRIVATE_IMPORTS: set[str] = set()
"""``module: from X import _name`` still to fix; this list may only shrink (it is empty: keep it so)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: str, path: Path, node: ast.AST, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ours that an import statement loads (``from p import m`` loads ``p.m`` if it is one)."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name in known)
    elif isinstance(node, ast.ImportFrom):
        source = _absolute(module, path, node)
        submodules = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known]
        if source in known and len(submodules) < len(node.names):
            yield source
        yield from submodules


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[module] = {t for node in ast.walk(tree) for t in _targets(module, path, node, modules)} - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _is_package_of(parent: str, child: str) -> bool:
    return child.startswith(parent + ".")


def private_imports() -> set[str]:
    """``module: from X import _name`` for every import of an underscore name from another module.

    A package's ``__init__`` may take private names from its own submodules (and a submodule from its
    package), which is how a package keeps one face; dunders (``__version__``) are public.
    """
    modules = _modules()
    out = set()
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(module, path, node)
            if source == "__future__" or _is_package_of(source, module) or _is_package_of(module, source):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.add(f"{module}: from {source} import {alias.name}")
    return out


def test_no_import_cycle():
    found = _cycles(_graph(_modules()))
    assert [c for c in found if c not in KNOWN_CYCLES] == [], "break the cycle: move what both need below both"
    assert [c for c in KNOWN_CYCLES if c not in found] == [], "fixed: take these off KNOWN_CYCLES"


def test_no_module_imports_another_modules_private_names():
    found = private_imports()
    assert found - KNOWN_PRIVATE_IMPORTS == set(), "import the public name, or make it public where it lives"
    assert KNOWN_PRIVATE_IMPORTS - found == set(), "fixed: take these off KNOWN_PRIVATE_IMPORTS"


def test_the_walk_finds_what_it_looks_for():
    # The checks above pass vacuously if the walk finds nothing; this proves it finds what it should.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    graph = _graph(_modules())
    assert "sandbox.task" in graph["sandbox.domain"]
    assert "sandbox.domains" in graph["sandbox.agents.oracle.tools"], "a function-level import is an edge"
    assert "sandbox.perturbations" not in graph["sandbox.perturbations.base"]


LAYER_OF = {"sandbox.evaluation": "core", "sandbox.audits": "audits", "sandbox": "sandbox", "training": "training",
            "pytest_openagent": "plugin"}  # fmt: skip
ALLOWED = {"sandbox": {"sandbox"}, "core": {"sandbox", "core"}, "audits": {"sandbox", "core", "audits"},
           "training": {"sandbox", "core", "training"},
           "plugin": {"sandbox", "core", "audits", "training", "plugin"}}  # fmt: skip
"""DESIGN.md's layers: plugin -> training -> evaluation core -> sandbox (the core loads ``hf:`` agents from
training lazily, by name: ``sandbox/evaluation/specs.py``, no import statement). The audits (``sandbox/audits``:
``check-domain``, the generated pages) prove worlds and perturbations through the evaluation core, so they sit on
it; only the plugin's commands import them."""


def _layer(module: str) -> str:
    return next(layer for prefix, layer in LAYER_OF.items() if module == prefix or module.startswith(prefix + "."))


def test_every_import_arrow_points_down_the_layers():
    graph = _graph(_modules())
    upward = sorted(
        f"{module} ({_layer(module)}) -> {target} ({_layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if _layer(target) not in ALLOWED[_layer(module)]
    )
    assert upward == []


def test_a_case_knows_the_shape_of_a_runner_and_a_report_knows_no_gates():
    graph = _graph(_modules())
    assert not {m for m in graph["sandbox.case"] if _layer(m) == "core"}
    assert "sandbox.evaluation.report" in graph["sandbox.evaluation.gate"]
    assert "sandbox.evaluation.gate" not in graph["sandbox.evaluation.report"]


def test_the_audits_sit_on_the_evaluation_core_never_under_it():
    # check-domain proves a world through the core's cache and runner; the core (diff-test included) takes the tasks
    # a check runs on from its own draw, never from an audit.
    graph = _graph(_modules())
    assert {"sandbox.audits.check_domain", "sandbox.audits.domain_matrix"} <= set(graph)
    assert not {"sandbox.evaluation.check_domain", "sandbox.evaluation.domain_matrix"} & set(graph)
    assert {"sandbox.evaluation.cache", "sandbox.evaluation.runner"} <= graph["sandbox.audits.check_domain"]
    under = sorted(f"{m} -> {t}" for m, ts in graph.items() if _layer(m) != "plugin" and _layer(m) != "audits"
                   for t in ts if _layer(t) == "audits")  # fmt: skip
    assert under == [], "only the plugin's commands import an audit"
    assert _floor_breaches({"sandbox.evaluation.diff_test": {"sandbox.audits.check_domain"}}) == {
        "sandbox.evaluation.diff_test -> sandbox.audits.check_domain"
    }


def test_the_plugin_uses_no_pytest_internals():
    offenders = [
        f"{module}: {node.module if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]}"
        for module, path in _modules().items()
        if module.startswith("pytest_openagent")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(name.split(".")[0] in {"_pytest", "_hypothesis_pytestplugin"}
                for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]))
    ]  # fmt: skip
    assert offenders == []


ROOMS = {"sandbox.domains": "registry", "sandbox.domains.registry": "registry", "sandbox.domains.": "domains",
         "sandbox.perturbations": "perturbations", "sandbox.case": "case", "sandbox.proxy": "proxy",
         "sandbox.agents": "agents", "sandbox.audits": "audits", "sandbox.evaluation": "evaluation",
         "sandbox": "face"}  # fmt: skip
"""Module prefix → room; the longest prefix wins (``sandbox.domains`` and ``sandbox.domains.registry`` are the
registry, the other subpackages the domains). Every other module at the top of ``sandbox/`` is the kernel (tools,
tasks, state, env, episode, judge, parse, errors...). A room imports its own floor's modules only within itself:
side by side, neither imports the other."""
FLOOR = {"kernel": 0, "registry": 1, "domains": 2, "perturbations": 2, "case": 3, "proxy": 4, "agents": 5,
         "evaluation": 6, "audits": 7, "face": 8}  # fmt: skip
"""DESIGN.md's floors inside the sandbox: kernel → domain registry → domains beside perturbations → case →
proxy (serves any perturbed env) → agents → the evaluation core → audits (run through the core's cache and
runner) → the package's face."""
BLIND_AGENTS = {"domains", "perturbations"}
"""What an agent may not read, though it sits below: an agent sees what any agent sees (the conversation and the
tool specs), so it knows no concrete domain and no perturbation's workings."""
ORACLE_READS = {
    "sandbox.agents.oracle.observations -> sandbox.perturbations.formats":
        "the result formats format_shift writes, parsed back, so the oracle reads any rendering of a result",
    "sandbox.agents.oracle.observations -> sandbox.perturbations.vocab":
        "the key renames, envelopes and notes of the observation perturbations, undone to read results",
    "sandbox.agents.oracle.tools -> sandbox.perturbations.vocab":
        "the decoy markers and parameter forms of the tool perturbations, and a domain's vocabulary, to tell "
        "each visible tool's capability",
    "sandbox.agents.oracle.choice -> sandbox.perturbations.vocab":
        "a domain's vocabulary (its finder and the tools that take the finder's id)",
    "sandbox.agents.oracle.planner -> sandbox.perturbations.vocab":
        "a domain's vocabulary (its finder and the tools that take the finder's id)",
    "sandbox.agents.oracle.cross_check -> sandbox.perturbations.echo":
        "the echo rule deceptive_result lies by: the oracle compares an answer's echo with what it asked",
    "sandbox.agents.oracle.cross_check -> sandbox.perturbations.witness":
        "the witness rule deceptive_record lies by: the oracle compares a record with an earlier answer about the "
        "same entity",
}  # fmt: skip
"""The reference agents' deliberate reads below their floor's rule, each with why: the oracle proves every
perturbation keeps a task solvable, so it reads what the perturbations write, never the task's answer; the static
baseline replays what training on the clean world burned in. The gold plan's reading (its replay on the clean tools,
which result feeds which argument, which tools write) is the kernel's (``sandbox.gold_plan``): no read of it is
declared here."""


def _room(module: str) -> str:
    if module.count(".") == 1 and module not in ROOMS:
        return "kernel"
    prefix = max((p for p in ROOMS if module == p or module.startswith(p if p.endswith(".") else p + ".")), key=len)
    return ROOMS[prefix]


def _in_sandbox(module: str) -> bool:
    return _layer(module) in {"sandbox", "core", "audits"}


def _floor_breaches(graph: dict[str, set[str]]) -> set[str]:
    """``module -> target`` for every import inside ``sandbox/`` that does not point down the floors."""
    out = set()
    for module, targets in graph.items():
        if not _in_sandbox(module):
            continue
        for target in filter(_in_sandbox, targets):
            here, there = _room(module), _room(target)
            if here != there and (FLOOR[there] >= FLOOR[here] or (here == "agents" and there in BLIND_AGENTS)):
                out.add(f"{module} -> {target}")
    return out


def test_every_import_inside_the_sandbox_points_down_its_floors():
    breaches = _floor_breaches(_graph(_modules()))
    assert sorted(breaches - set(ORACLE_READS)) == [], "move what both need down a floor, or the importer up"
    assert sorted(set(ORACLE_READS) - breaches) == [], "no longer read: take it off ORACLE_READS"


def test_the_floors_see_what_they_look_for():
    assert {_room(m) for m in ("sandbox.task", "sandbox.domains", "sandbox.domains.poi.tools", "sandbox")} == {
        "kernel",
        "registry",
        "domains",
        "face",
    }
    breaches = _floor_breaches({"sandbox.domains.poi.tools": {"sandbox.perturbations.base", "sandbox.task"},
                                "sandbox.agents.static": {"sandbox.domains.poi.world", "sandbox.domains"},
                                "sandbox.perturbations.base": {"sandbox.domains", "sandbox.env"}})  # fmt: skip
    assert breaches == {"sandbox.domains.poi.tools -> sandbox.perturbations.base",
                        "sandbox.agents.static -> sandbox.domains.poi.world"}  # fmt: skip


def test_the_gold_plan_is_read_on_the_kernels_floor():
    # Perturbations, the oracle, the static baseline and evaluation read the gold plan from one floor below them all:
    # the kernel's reading takes the task's domain, so it imports neither the registry nor a perturbation.
    graph = _graph(_modules())
    assert _room("sandbox.gold_plan") == "kernel"
    assert not {m for m in graph["sandbox.gold_plan"] if _room(m) != "kernel"}
    assert "sandbox.perturbations.plan" not in graph, "the gold plan's reading is the kernel's: sandbox/gold_plan.py"
    readers = {m for m, targets in graph.items() if "sandbox.gold_plan" in targets}
    assert {_room(m) for m in readers} >= {"perturbations", "agents"}
    reads = {"sandbox.perturbations.base", "sandbox.domains", "sandbox.task"}
    assert _floor_breaches({"sandbox.gold_plan": reads}) == {
        "sandbox.gold_plan -> sandbox.perturbations.base",
        "sandbox.gold_plan -> sandbox.domains",
    }


MCP_LIBRARIES = {"mcp", "mcp_types", "fastmcp"}
MCP_PACKAGES = ("sandbox.domains.mcp", "sandbox.proxy")
"""The MCP domain (a server's tools as a world) and the proxy (an env served as an MCP server)."""


def test_only_the_mcp_package_imports_an_mcp_library():
    offenders = sorted(
        f"{module}: {name}"
        for module, path in _modules().items()
        if not module.startswith(MCP_PACKAGES)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom | ast.Import)
        for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
        if name.split(".")[0] in MCP_LIBRARIES
    )
    assert offenders == [], "import the MCP SDK inside sandbox/domains/mcp or sandbox/proxy, so nothing else loads it"
