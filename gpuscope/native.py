"""The compiled extensions, one seam: every C module gpuscope may use is loaded here.

    native.load("scan")        # gpuscope.parsers._scan, or None
    native.status()            # {name: "loaded" | "not built" | "off (GPUSCOPE_PURE_SCANNER=1)"}

Each is optional (setup.py builds them where a C compiler is present): without one, or with
GPUSCOPE_PURE_SCANNER=1 (read on every call: tests flip it), the Python and numpy/pandas paths
read the same input to the same result. `gpuscope info` shows which are loaded.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

PURE_ENV = "GPUSCOPE_PURE_SCANNER"

#: name -> (module, what it does for a user: where the C path is felt)
MODULES = {
    "scan": ("gpuscope.parsers._scan", "timing logs: the line scanner (a 1M-line log)"),
    "samples": ("gpuscope.parsers._samples", "samples.csv reader (a day of samples)"),
    "groupstats": ("gpuscope._groupstats", "per-component statistics (a 1M-line log)"),
}


def pure() -> bool:
    """GPUSCOPE_PURE_SCANNER=1: no compiled module at all (the Python paths only)."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


@functools.cache
def _import(module: str) -> ModuleType | None:
    try:  # (by name: an extension is no module of the source tree)
        return importlib.import_module(module)
    except ImportError:
        return None


def load(name: str) -> ModuleType | None:
    """The compiled module `name` (a key of MODULES), or None (not built, or switched off)."""
    if pure():
        return None
    return _import(MODULES[name][0])


def status() -> dict[str, str]:
    """Each compiled module's state, for `gpuscope info`."""
    if pure():
        return {name: f"off ({PURE_ENV}=1)" for name in MODULES}
    return {name: "loaded" if _import(mod) is not None else "not built" for name, (mod, _) in MODULES.items()}
