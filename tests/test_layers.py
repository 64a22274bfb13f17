"""The layers of the house hold: an import walk over every module of the package.

Layers, lowest first (README "Code map", docs/DESIGN): a module imports only from
its own layer or a lower one.

    schemas < filters < stages.config < stages.engines < stages < runners < pipeline

The walk parses each module's source (``ast``), so it sees every import: those at
module level, inside functions and methods, under ``if`` and ``try``, and
``importlib.import_module("mmcurate....")`` with a literal name. It fails on

- an import from a higher layer (an "upward" import);
- an import cycle between modules, of any length, through any kind of import;
- ``apache_beam`` imported in ``stages/engines``, ``stages/config``, ``filters`` or
  ``schemas`` (the Beam-free layers);
- the package root (``mmcurate``, pipeline/_root) importing one of our modules when
  it is imported: every import of any module runs it first, so it names its API
  lazily (tests/test_python_api.py checks those names).

It started with an allow-list of the violations the tree had (a cycle among the
commands, upward imports of runners and pipeline from the read, scoring and quality
stages); each was removed, and so was the list: there are no exceptions.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]

# Source folder -> dotted package (pyproject.toml [tool.setuptools.package-dir]).
PACKAGE_DIRS = {
    "pipeline/_root": "mmcurate",
    "pipeline": "mmcurate.pipeline",
    "stages": "mmcurate.stages",
    "filters": "mmcurate.filters",
    "schemas": "mmcurate.schemas",
    "runners": "mmcurate.runners",
}

# Layers, lowest first; a module's layer is the longest prefix that names it.
LAYERS = (
    "mmcurate.schemas",
    "mmcurate.filters",
    "mmcurate.stages.config",
    "mmcurate.stages.engines",
    "mmcurate.stages",
    "mmcurate.runners",
    "mmcurate.pipeline",
)
BEAM_FREE = ("mmcurate.schemas", "mmcurate.filters", "mmcurate.stages.config", "mmcurate.stages.engines")
PACKAGE_ROOT = "mmcurate"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("").as_posix()
    folder = max((d for d in PACKAGE_DIRS if rel == d or rel.startswith(d + "/")), key=len)
    parts = [PACKAGE_DIRS[folder], *rel[len(folder) :].strip("/").split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(p for p in parts if p)


def _sources() -> dict[str, Path]:
    modules = {}
    for folder in PACKAGE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            modules[_module_name(path)] = path
    return modules


MODULES = _sources()


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module or a name inside one) is, if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str, source: str | None = None) -> list[tuple[str, int, bool]]:
    """(imported name, line, at module level) for every import in ``module``.

    Besides import statements: ``importlib.import_module("x")`` and
    ``find_spec("x")`` with a literal name, and a path built from ``__file__`` into
    another package's folder (``Path(__file__).parents[1] / "pipeline" / ...``),
    which depends on that package as much as an import does."""
    if source is None:
        source = MODULES[module].read_text(encoding="utf-8")
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = _package_of(module).split(".")
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join([*package, base] if base else package)
                for alias in child.names:
                    # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
                    submodule = f"{base}.{alias.name}"
                    found.append((submodule if submodule in MODULES else base, child.lineno, top))
            elif isinstance(child, ast.Call) and _called(child) in ("import_module", "find_spec") and child.args:
                if isinstance(child.args[0], ast.Constant) and isinstance(child.args[0].value, str):
                    found.append((child.args[0].value, child.lineno, top))
            elif isinstance(child, ast.BinOp) and isinstance(child.op, ast.Div):
                folder = _folder_from_file(child)
                if folder is not None:
                    found.append((PACKAGE_DIRS[folder], child.lineno, top))
                    continue  # the inner operands of this path are the same reference
            visit(child, inner)

    visit(ast.parse(source), True)
    return found


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _folder_from_file(path: ast.BinOp) -> str | None:
    """The package folder a ``__file__``-relative path expression names first, if any."""
    parts: list[ast.expr] = []
    node: ast.expr = path
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        parts.append(node.right)
        node = node.left
    if not any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node)):
        return None
    for part in reversed(parts):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            return part.value if part.value in PACKAGE_DIRS else None
    return None


def _layer(module: str) -> int:
    return max(
        (i for i, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + ".")),
        key=lambda i: len(LAYERS[i]),
    )


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module in MODULES:
        for name, _line, _top in _imports(module):
            target = _resolve(name)
            if target is not None and target != module and target != PACKAGE_ROOT:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
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
                components.append(sorted(component))

    for v in sorted(set(graph) | {w for targets in graph.values() for w in targets}):
        if v not in index:
            connect(v)
    return components


def violations() -> dict[tuple[str, str, str], str]:
    """Every violation in the tree: (kind, module, imported) -> where it is. Kind
    "upward": ``module`` imports the higher-layer ``imported``; "beam": it imports
    apache_beam; "root": the package root imports ``imported`` with itself; "cycle":
    ``module`` and ``imported`` are the first two (sorted) members of a cycle."""
    found: dict[tuple[str, str, str], str] = {}
    for module in sorted(MODULES):
        rel = MODULES[module].relative_to(ROOT).as_posix()
        for name, line, top in _imports(module):
            target = _resolve(name)
            if name == "apache_beam" or name.startswith("apache_beam."):
                if module.startswith(BEAM_FREE):
                    found.setdefault(("beam", module, "apache_beam"), f"{rel}:{line}")
            elif module == PACKAGE_ROOT:
                if target is not None and top:
                    found[("root", module, target)] = f"{rel}:{line} (imported with the package)"
            elif target is not None and target != PACKAGE_ROOT and _layer(target) > _layer(module):
                found.setdefault(("upward", module, target), f"{rel}:{line}")
    for component in _cycles(_graph()):
        found[("cycle", component[0], component[1])] = " -> ".join(component)
    return found


def test_the_walk_sees_every_layer_and_every_kind_of_import():
    # The walk must reach each layer's modules and the imports hidden in functions,
    # or an empty result proves nothing.
    assert {_layer(m) for m in MODULES if m != PACKAGE_ROOT} == set(range(len(LAYERS)))
    build = {_resolve(name) for name, _line, _top in _imports("mmcurate.pipeline.build")}
    assert "mmcurate.pipeline.config" in build and "mmcurate.stages.read" in build
    nested = [name for module in MODULES for name, _line, top in _imports(module) if not top]
    assert any(_resolve(name) for name in nested), "no function-level import of ours was seen"


def test_reads_relative_nested_dynamic_and_path_imports():
    source = (
        "from . import read\n"
        "from .results import StageResult\n"
        "import apache_beam as beam\n"
        "MODELS = Path(__file__).resolve().parents[1] / 'pipeline' / 'models'\n"
        "DATA = Path(__file__).parent / 'data'\n"
        "def f():\n"
        "    from ..runners import presets\n"
        "    importlib.import_module('mmcurate.pipeline.config')\n"
    )
    found = [(_resolve(name) or name, top) for name, _line, top in _imports("mmcurate.stages.extract", source)]
    assert found == [
        ("mmcurate.stages.read", True),
        ("mmcurate.stages.results", True),
        ("apache_beam", True),
        ("mmcurate.pipeline", True),
        ("mmcurate.runners.presets", False),
        ("mmcurate.pipeline.config", False),
    ]


def test_finds_every_cycle_and_only_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


def test_layers_hold():
    found = sorted(violations().items())
    lines = [f"  {kind}: {module} -> {target}  ({where})" for (kind, module, target), where in found]
    assert not lines, "imports that break the layers (README 'Code map'):\n" + "\n".join(lines)
