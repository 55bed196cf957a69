"""The project's import graph, read from the source with `ast` (nothing is imported).

A module is named as it installs (parsers/log/kv.py -> gpuscope.parsers.log.kv). An edge A -> B means
A imports B at run time, at module level or inside a function; imports under
`if TYPE_CHECKING:` are type annotations only and are left out. `from pkg import name` is an
edge to pkg.name when that is a module, else to pkg (its __init__).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"gpuscope": "gpuscope", "parsers": "gpuscope.parsers", "reports": "gpuscope.reports"}


@cache
def modules() -> dict[str, Path]:
    out = {}
    for folder, name in FOLDERS.items():
        for p in (REPO / folder).rglob("*.py"):
            parts = p.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((name, *parts))] = p
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    skip.update(id(n) for n in ast.walk(sub))
    return skip


def _resolve(name: str) -> str | None:
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@cache
def tree_of(module: str) -> ast.Module:
    """The module's syntax tree, parsed once for every test that reads it."""
    return ast.parse(modules()[module].read_text())


def imports_of(module: str, type_only: bool = False) -> set[str]:
    """The modules `module` imports at run time (with `type_only`, its TYPE_CHECKING imports too)."""
    tree = tree_of(module)
    skip = set() if type_only else _type_checking_nodes(tree)
    deps: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if (r := _resolve(a.name)) is not None:
                    deps.add(r)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                r = full if full in modules() else _resolve(node.module)
                if r is not None:
                    deps.add(r)
    deps.discard(module)
    return deps


@cache
def graph(type_only: bool = False) -> dict[str, frozenset[str]]:
    return {m: frozenset(imports_of(m, type_only)) for m in modules()}


def cycles(type_only: bool = False) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan); `type_only`: counting the
    imports under TYPE_CHECKING too (a cycle of annotations)."""
    return cycles_of(graph(type_only))


def cycles_of(g: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node of graph `g` (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out
