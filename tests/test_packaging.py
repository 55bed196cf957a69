"""The distribution installs one top-level package, `gpuscope`: the repository's parsers/ and
reports/ folders become gpuscope.parsers and gpuscope.reports (pyproject.toml package-dir), so
nothing generic lands in site-packages and a user's own parsers/ folder cannot shadow ours."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def _packages_on_disk() -> set[str]:
    """Every folder with an __init__.py, named as it installs."""
    out = set()
    for top, name in (("gpuscope", "gpuscope"), ("parsers", "gpuscope.parsers"), ("reports", "gpuscope.reports")):
        for init in (REPO / top).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / top).parts
            out.add(".".join((name, *rel)))
    return out


def test_pyproject_lists_every_package():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(cfg["packages"]) == _packages_on_disk()
    assert cfg["package-dir"] == {"gpuscope": "gpuscope", "gpuscope.parsers": "parsers",
                                  "gpuscope.reports": "reports"}


def test_editable_install_maps_parsers_and_reports():
    for name, folder in (("gpuscope.parsers", "parsers"), ("gpuscope.reports", "reports")):
        spec = importlib.util.find_spec(name)
        assert spec is not None and Path(spec.origin).parent == REPO / folder


def test_no_generic_top_level_packages(tmp_path):
    """From a neutral directory `parsers` and `reports` are not ours; a user's own parsers/
    folder in the current directory does not shadow gpuscope's under `python -m gpuscope`."""
    (tmp_path / "parsers").mkdir()
    (tmp_path / "parsers" / "__init__.py").write_text("raise RuntimeError('the user parsers package')\n")
    log = REPO / "examples" / "article_excerpt.log"
    p = subprocess.run([sys.executable, "-m", "gpuscope", "analyze", str(log), "--json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    probe = "import importlib.util as u; print(u.find_spec('reports'))"
    q = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert q.stdout.strip() == "None"


@pytest.mark.slow
def test_wheel_holds_only_the_gpuscope_namespace(tmp_path):
    src = tmp_path / "src"  # pip builds a local folder in place: keep build/ out of the checkout
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("gpuscope", "parsers", "reports"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "setup.py"):
        shutil.copy(REPO / name, src / name)
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(src)], capture_output=True, text=True, timeout=300)
    if p.returncode != 0 and "No module named" in p.stderr:
        pytest.skip(f"cannot build a wheel here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr
    (whl,) = tmp_path.glob("gpuscope-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gpuscope"}
    for must in ("gpuscope/parsers/__init__.py", "gpuscope/reports/console.py",
                 "gpuscope/models/cuzk.toml", "gpuscope/workload/cuda/msm.cu"):
        assert must in names
    if _compiler():
        assert any(n.startswith("gpuscope/parsers/_scan.") and n.endswith((".so", ".pyd")) for n in names)
        assert any(n.startswith("gpuscope/_groupstats.") and n.endswith((".so", ".pyd")) for n in names)


def _compiler() -> bool:
    return bool(shutil.which("cc") or shutil.which("gcc"))


def _build_sdist(tmp_path) -> Path:
    """The sdist, built by setuptools' PEP 517 hook from a copy of the checkout."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.so")
    for name in ("gpuscope", "parsers", "reports"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "setup.py"):
        shutil.copy(REPO / name, src / name)
    out = tmp_path / "dist"
    p = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"],
                       cwd=src, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out / p.stdout.strip().splitlines()[-1]


def _install_sdist(sdist: Path, target: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
                           "--target", str(target), str(sdist)], capture_output=True, text=True, timeout=300, env=env)


# the installed copy under `target`, not the checkout's editable install
_PROBE = ("import sys; sys.path.insert(0, {target!r}); sys.meta_path[:] = [f for f in sys.meta_path if 'editable' "
          "not in (getattr(f, '__module__', '') + getattr(f, '__name__', '') + type(f).__name__).lower()]; "
          "import gpuscope, importlib; print(gpuscope.__file__); from gpuscope.parsers.log import scan; "
          "print(scan.compiled_scanner() is not None); "
          "from gpuscope.cli import main; sys.argv = ['gpuscope', 'analyze', {log!r}, '--json']; main()")


@pytest.mark.slow
@pytest.mark.parametrize("compiler", ["present", "absent"])
def test_the_sdist_installs_with_and_without_a_compiler(tmp_path, compiler):
    """`pip install` of the sdist builds the compiled scanner where a C compiler is; without
    one (CC=false) the install still succeeds and the Python scanners read every line."""
    if compiler == "present" and not _compiler():
        pytest.skip("no C compiler here")
    sdist = _build_sdist(tmp_path)
    import tarfile

    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("/parsers/_scan.c") for m in members) and any(m.endswith("/setup.py") for m in members)
    env = dict(__import__("os").environ)
    if compiler == "absent":
        env["CC"] = "false"
    target = tmp_path / "site"
    p = _install_sdist(sdist, target, env)
    if p.returncode != 0 and "No module named" in p.stderr:
        pytest.skip(f"cannot build here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr
    built = list((target / "gpuscope" / "parsers").glob("_scan.*.so"))
    assert bool(built) == (compiler == "present")
    assert bool(list((target / "gpuscope").glob("_groupstats.*.so"))) == (compiler == "present")
    log = str(REPO / "examples" / "article_excerpt.log")
    env.pop("GPUSCOPE_PURE_SCANNER", None)
    q = subprocess.run([sys.executable, "-c", _PROBE.format(target=str(target), log=log)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env=env)
    assert q.returncode == 0, q.stderr
    where, native, *doc = q.stdout.splitlines()
    assert where.startswith(str(target)) and native == str(compiler == "present")
    assert '"records": 4' in "\n".join(doc)


def test_pictures_need_no_extra():
    """`pip install -e .` (the README's analyzer install) must be enough for plot and --html."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("matplotlib") for d in deps)


def test_a_source_checkout_without_the_mapping_still_imports(tmp_path):
    """An install that only puts the checkout on sys.path (an old setuptools' develop mode, as
    on the GPU machine) or none at all: gpuscope/_layout.py maps the two folders itself."""
    for name in ("gpuscope", "parsers", "reports"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    probe = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
             "(getattr(f, '__module__', '') + getattr(f, '__name__', '') + type(f).__name__).lower()]; "
             "import gpuscope.parsers, gpuscope.reports.console, gpuscope.parsers.log.kv; "
             "print(gpuscope.parsers.__file__); print(gpuscope.reports.console.__file__)")
    p = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(tmp_path / "parsers" / "__init__.py"), str(tmp_path / "reports" / "console.py")]
