"""mypy over the package (the files of [tool.mypy] in pyproject.toml, less its exclude).

The repository keeps parsers/ and reports/ beside gpuscope/ and installs them as
gpuscope.parsers and gpuscope.reports (setuptools package-dir); the editable install maps them
with an import hook that mypy cannot follow. So mypy runs in build/mypy-tree, a tree of
symbolic links laid out as installed (gpuscope/ with parsers/ and reports/ inside), and the
paths it reports are given back as the repository's. Exit status: mypy's.

    python tools/typecheck.py        # make test runs it after ruff
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from mypy import api

REPO = Path(__file__).resolve().parents[1]
TREE = REPO / "build" / "mypy-tree"
MAPPED = {"parsers": "gpuscope/parsers", "reports": "gpuscope/reports"}


def link_tree() -> None:
    """TREE/gpuscope: a link to every entry of gpuscope/, and parsers/, reports/ inside it."""
    pkg = TREE / "gpuscope"
    if pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    for entry in (REPO / "gpuscope").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for folder, inside in MAPPED.items():
        (TREE / inside).symlink_to(REPO / folder)


def repo_path(line: str) -> str:
    """`gpuscope/parsers/log/kv.py:3: ...` -> `parsers/log/kv.py:3: ...`."""
    for folder, inside in MAPPED.items():
        if line.startswith(inside + "/"):
            return folder + line[len(inside):]
    return line


def main() -> int:
    link_tree()
    os.chdir(TREE)
    out, err, code = api.run(["--config-file", str(REPO / "pyproject.toml"), *sys.argv[1:]])
    sys.stdout.write("".join(repo_path(line) + "\n" for line in out.splitlines()))
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
