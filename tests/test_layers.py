"""Import rules between gpuscope's layers, checked on the source (lazy imports included):
the workload, the recorder, the sampler and the other GPU-side modules stay below the
analyzer, and gpuscope.workload has no import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO


def _runtime_nodes(tree: ast.AST):
    """Every node, except those under `if TYPE_CHECKING:` (imports for annotations only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def _module_imports(path: Path) -> set[str]:
    """Absolute gpuscope modules a file imports when it runs, lazy imports included (`from
    gpuscope.x import y` counts gpuscope.x and gpuscope.x.y, since y may be a module)."""
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.startswith("gpuscope.")}


def test_the_workload_modules_import_no_cycle():
    """gpuscope.workload's modules form no import cycle, lazy imports included (annotation-only
    imports under TYPE_CHECKING are not imports at run time)."""
    folder = REPO / "gpuscope" / "workload"
    mods = {f"gpuscope.workload.{p.stem}": p for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {m: {d for d in _module_imports(p) if d in mods and d != m} for m, p in mods.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            assert state.get(d) != 1, "import cycle: " + " -> ".join([*path, m, d])
            if d not in state:
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m, [])


#: The modules that run or sample the GPU: they write run directories, the analyzer reads them.
LOWER = sorted([*(REPO / "gpuscope" / "workload").glob("*.py"),
                *(REPO / "gpuscope" / f for f in ("recorder.py", "sampler.py", "hostbw.py", "cuda.py",
                                                   "gpuinfo.py", "nvml.py"))])
UPPER = ("gpuscope.analysis", "gpuscope.reports", "gpuscope.parsers", "gpuscope.cli")
#: (file, function) where an upper-layer import is allowed: the run's own analysis at its end.
ALLOWED = {("gpuscope/workload/runner.py", "_analyze")}


def _imports_by_function(tree: ast.AST, fn: str | None = None):
    """(module, enclosing function or None, line) of every import, annotation-only ones too."""
    for node in ast.iter_child_nodes(tree):
        inner = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else fn
        if isinstance(node, ast.Import):
            yield from ((a.name, fn, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, fn, node.lineno
        yield from _imports_by_function(node, inner)


def test_the_gpu_side_does_not_import_the_analyzer():
    found = []
    for path in LOWER:
        rel = str(path.relative_to(REPO))
        for mod, fn, line in _imports_by_function(ast.parse(path.read_text(encoding="utf-8"))):
            upper = any(mod == u or mod.startswith(u + ".") for u in UPPER)
            if upper and (rel, fn) not in ALLOWED:
                found.append(f"{rel}:{line} imports {mod}")
    assert found == [], "the GPU side imports the analyzer: " + "; ".join(found)
    assert len(LOWER) > 15 and all(p.exists() for p in LOWER)


def test_the_layer_scan_sees_lazy_and_type_checking_imports():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gpuscope.cli\n"
                     "def f():\n    from gpuscope.analysis import analyze\n")
    assert [(m, fn) for m, fn, _ in _imports_by_function(tree)] == [
        ("typing", None), ("gpuscope.cli", None), ("gpuscope.analysis", "f")]
