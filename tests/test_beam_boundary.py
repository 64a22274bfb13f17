"""mmcurate uses Beam through its public API only: no module of ours imports a
private Beam module or name, replaces an attribute of anything Beam defines, or
checks Beam's version. The one exception is runners/dask_runner.py, the fixes Beam's
own DaskRunner needs (its docstring names the upstream defects, and
tests/runners/test_dask.py fails once Beam no longer has the first)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "runners", "stages", "filters", "schemas")
EXCEPTION = ROOT / "runners" / "dask_runner.py"


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if p != EXCEPTION)


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in dotted.split("."))


def violations(source: str, name: str) -> list[str]:
    """What in ``source`` crosses Beam's public boundary, one line each."""
    tree = ast.parse(source, name)
    found = []
    beam_names: set[str] = set()  # local names bound to Beam modules or objects
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "apache_beam":
                    beam_names.add((alias.asname or alias.name).split(".")[0])
                    if _private(alias.name):
                        found.append(f"{name}:{node.lineno}: imports private {alias.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "apache_beam":
            for alias in node.names:
                beam_names.add(alias.asname or alias.name)
                if _private(node.module) or _private(alias.name):
                    found.append(f"{name}:{node.lineno}: imports private {node.module}.{alias.name}")
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and _root(target) in beam_names:
                found.append(f"{name}:{node.lineno}: replaces {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if node.args and _root(node.args[0]) in beam_names:
                found.append(f"{name}:{node.lineno}: {node.func.id} on {ast.unparse(node.args[0])}")
        if isinstance(node, ast.Attribute) and node.attr == "__version__" and _root(node) in beam_names | {"apache_beam"}:
            found.append(f"{name}:{node.lineno}: reads Beam's version")
        if isinstance(node, ast.Constant) and node.value == "apache-beam" and _in_version_call(tree, node):
            found.append(f"{name}:{node.lineno}: reads Beam's version")
    return found


def _root(node: ast.AST):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _in_version_call(tree: ast.AST, constant: ast.Constant) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and constant in node.args and "version" in ast.unparse(node.func):
            return True
    return False


def test_no_module_of_ours_crosses_beams_public_boundary():
    found = [v for path in _sources() for v in violations(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


@pytest.mark.parametrize(
    "source, what",
    [
        ("from apache_beam.runners.common import _OutputHandler", "imports private"),
        ("import apache_beam.runners.dask._internal as x", "imports private"),
        ("from apache_beam.transforms import core\ncore.DoFn.process = None", "replaces core.DoFn.process"),
        ("import apache_beam as beam\nbeam.Map = None", "replaces beam.Map"),
        ("from apache_beam.runners import common\nsetattr(common, 'x', 1)", "setattr on common"),
        ("import apache_beam\nif apache_beam.__version__ < '3': pass", "reads Beam's version"),
        ("from importlib.metadata import version\nv = version('apache-beam')", "reads Beam's version"),
    ],
)
def test_each_kind_of_crossing_is_caught(source, what):
    [found] = violations(source, "x.py")
    assert what in found


def test_the_exception_is_the_dask_runner_fix_alone():
    assert violations(EXCEPTION.read_text(), "dask_runner.py")  # it does cross: that is why it is kept apart
