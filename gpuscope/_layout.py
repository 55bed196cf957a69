"""The source checkout's layout, for runs that did not install gpuscope through setuptools'
package-dir mapping: the repository keeps parsers/ and reports/ beside gpuscope/, while an
installed gpuscope holds them as gpuscope.parsers and gpuscope.reports (pyproject.toml).

An editable install maps them with its own import hook, a wheel copies them inside the
package. When neither did (python -m gpuscope straight from a checkout, an old setuptools'
`develop` install that only puts the checkout on sys.path), this finder maps the two names to
the folders beside the package. It is appended last to sys.meta_path, so an installed
mapping always wins, and it answers for exactly these two names."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDERS = {"gpuscope.parsers": HERE.parent / "parsers", "gpuscope.reports": HERE.parent / "reports"}


class SourceLayoutFinder:
    """A meta path finder (find_spec is the whole protocol: importlib.abc's base class would import
    importlib.resources, tempfile, shutil, bz2, lzma and random, ~10-20 ms of every start)."""

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        folder = FOLDERS.get(fullname)
        if folder is None or not (folder / "__init__.py").is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


def install() -> None:
    """Add the finder once, when the package has no parsers/ of its own (a source checkout)."""
    if (HERE / "parsers").is_dir() or any(isinstance(f, SourceLayoutFinder) for f in sys.meta_path):
        return
    sys.meta_path.append(SourceLayoutFinder())
