"""Count the imports that sit inside functions (issue 31: "fewer than 100"), read with `ast`.

    .venv/bin/python tools/count_local_imports.py            # the package's own imports, per folder
    .venv/bin/python tools/count_local_imports.py --all      # third-party ones too (pandas, typer, ...)
    .venv/bin/python tools/count_local_imports.py --list gpuscope/cli   # each one, file:line

An import inside a function hides an edge of the import graph from every tool; one stays where
it saves a user-felt cost (a command that never needs pandas, typer's 0.15 s), with a comment.
Imports under `if TYPE_CHECKING:` are annotations, not counted.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("gpuscope", "parsers", "reports")
OWN = ("gpuscope",)


def local_imports(path: Path, own_only: bool = True) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function of this file."""
    tree = ast.parse(path.read_text())
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.orelse:
                    visit(sub, in_function)
                continue
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                names = [a.name for a in child.names] if isinstance(child, ast.Import) else [child.module or "."]
                for name in names:
                    if not own_only or name.startswith(OWN) or (isinstance(child, ast.ImportFrom) and child.level):
                        out.append((child.lineno, name))
            visit(child, inside)

    visit(tree, False)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="third-party imports too")
    ap.add_argument("--list", metavar="PREFIX", help="list each import of the files under PREFIX")
    ap.add_argument("--root", type=Path, default=REPO, help="the checkout to count (default: this one)")
    a = ap.parse_args(argv)
    per: Counter[str] = Counter()
    for folder in FOLDERS:
        for p in sorted((a.root / folder).rglob("*.py")):
            rel = p.relative_to(a.root)
            found = local_imports(p, own_only=not a.all)
            per[str(rel.parent)] += len(found)
            if a.list and str(rel).startswith(a.list):
                for line, name in found:
                    print(f"{rel}:{line}: {name}")
    if not a.list:
        for folder, n in sorted(per.items()):
            if n:
                print(f"{n:5d}  {folder}")
    print(f"{sum(per.values()):5d}  in all ({'every import' if a.all else 'the package own imports'} inside functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
