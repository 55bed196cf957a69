"""gpuscope.cuda is the one CuPy boundary: no other module imports cupy, the analyzer never
loads it, and its messages and probes say what is missing."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gpuscope import cuda
from gpuscope.errors import EXIT_NO_GPU, NoGpuError
from tests.conftest import EXAMPLES, REPO

PACKAGE_DIRS = ("gpuscope", "parsers", "reports")
BOUNDARY = REPO / "gpuscope" / "cuda.py"


def _is_cupy(name: str | None) -> bool:
    return name is not None and (name == "cupy" or name.startswith("cupy."))


def cupy_imports(path: Path) -> list[int]:
    """Line numbers of `import cupy...`, `from cupy... import`, import_module("cupy...")."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import) and any(_is_cupy(a.name) for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_cupy(node.module):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and _is_cupy(node.args[0].value)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            lines.append(node.lineno)
    return lines


def test_only_the_boundary_imports_cupy():
    found = {}
    for top in PACKAGE_DIRS:
        for path in sorted((REPO / top).rglob("*.py")):
            if path != BOUNDARY and (lines := cupy_imports(path)):
                found[str(path.relative_to(REPO))] = lines
    assert found == {}, f"import CuPy through gpuscope.cuda, not directly: {found}"
    assert cupy_imports(BOUNDARY), "the boundary itself imports cupy"


def test_the_scan_sees_every_import_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import cupy\nimport cupy.cuda as c\nfrom cupy.cuda import runtime\n"
                   "import importlib\nimportlib.import_module('cupy')\nimport cupyx_other\n"
                   "from . import cupy\n")
    assert cupy_imports(src) == [1, 2, 3, 5]


_WATCH = """
import sys

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "cupy" or name.startswith("cupy."):
            sys.stderr.write("CUPY IMPORTED\\n")
        return None

sys.meta_path.insert(0, Watch())
sys.argv = ["gpuscope", *sys.argv[1:]]
from gpuscope.cli import main
main()
"""


@pytest.mark.parametrize("args", [["--help"], ["analyze", "--help"],
                                  ["analyze", str(EXAMPLES / "article_excerpt.log"), "--json"]])
def test_help_and_the_analyzer_never_import_cupy(args):
    p = subprocess.run([sys.executable, "-c", _WATCH, *args], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "CUPY IMPORTED" not in p.stderr


def _fake(count=None, error: Exception | None = None) -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.__version__ = "99.0"

    def get_count():
        if error is not None:
            raise error
        return count

    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
        getDeviceCount=get_count, runtimeGetVersion=lambda: 13000))
    return cp


def test_require_without_cupy_is_no_gpu_error_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import raises ModuleNotFoundError
    with pytest.raises(NoGpuError) as e:
        cuda.require("bandwidth")
    assert e.value.exit_code == EXIT_NO_GPU
    assert e.value.one_line() == ("bandwidth needs CuPy and a CUDA GPU: CuPy not importable "
                                  "(ModuleNotFoundError)")
    assert cuda.available() == (False, "CuPy not importable (ModuleNotFoundError)")
    assert cuda.describe()["present"] is False


def test_require_returns_the_module_in_sys_modules(monkeypatch):
    fake = _fake(count=2)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert cuda.require("x") is fake
    assert cuda.require_devices("x") == (fake, 2)
    assert cuda.available() == (True, "")
    assert cuda.describe() == {"present": True, "version": "99.0", "cuda_runtime": "13.0", "devices": 2}


def test_no_device_and_a_failing_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake(count=0))
    assert cuda.available() == (False, "no CUDA device")
    with pytest.raises(NoGpuError, match="^bandwidth needs a CUDA GPU: none found$"):
        cuda.require_devices("bandwidth")
    monkeypatch.setitem(sys.modules, "cupy", _fake(error=RuntimeError("no\n  driver")))
    assert cuda.available() == (False, "no CUDA device (RuntimeError)")
    with pytest.raises(NoGpuError, match="^bandwidth needs a CUDA GPU: RuntimeError: no driver$"):
        cuda.require_devices("bandwidth")
    assert cuda.describe() == {"present": True, "version": "99.0", "cuda_runtime": "13.0",
                               "devices": 0, "reason": "RuntimeError: no driver"}

