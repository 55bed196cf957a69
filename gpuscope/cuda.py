"""The one CuPy boundary: every `import cupy` in gpuscope is in this module.

Like gpuscope.nvml for NVML:

- Lazy: nothing imports CuPy until a GPU code path asks for it, so `gpuscope --help`,
  `analyze` and the other analyzer commands never load it (and work without CUDA).
- `require(what)`: the cupy module, or NoGpuError (exit 5) in one line saying that `what`
  needs CuPy; `require_devices(what)` also counts the CUDA devices (NoGpuError for none).
- `available() -> (ok, reason)`: CuPy importable and at least one CUDA device (the `auto`
  backend and the tests' `gpu` marker ask this).
- `describe()`: what `gpuscope info` reports about CuPy; `error_text(e)`: an exception in
  one short line.

The module is looked up afresh on every call (a dict lookup once it is imported), so a
test may stand a fake in for it with `monkeypatch.setitem(sys.modules, "cupy", fake)`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from gpuscope.errors import NoGpuError


def _import() -> ModuleType:
    import cupy

    return cupy


def error_text(e: BaseException, limit: int = 160) -> str:
    """`TypeName: message` with the message's white space folded and cut at `limit`."""
    return f"{type(e).__name__}: {' '.join(str(e).split())[:limit]}"


def require(what: str) -> ModuleType:
    """The cupy module; NoGpuError `<what> needs CuPy and a CUDA GPU: ...` when it cannot be
    imported (not installed, or built for another CUDA)."""
    try:
        return _import()
    except Exception as e:
        raise NoGpuError(f"{what} needs CuPy and a CUDA GPU: CuPy not importable "
                         f"({type(e).__name__})") from None


def require_devices(what: str) -> tuple[ModuleType, int]:
    """(cupy, number of CUDA devices >= 1); NoGpuError naming `what` when there is none."""
    cp = require(what)
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise NoGpuError(f"{what} needs a CUDA GPU: {error_text(e)}") from None
    if n < 1:
        raise NoGpuError(f"{what} needs a CUDA GPU: none found")
    return cp, n


def available() -> tuple[bool, str]:
    """(True, "") when CuPy imports and sees a CUDA device, else (False, why)."""
    try:
        cp = _import()
    except Exception as e:  # ImportError, or a broken CUDA install
        return False, f"CuPy not importable ({type(e).__name__})"
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no CUDA device ({type(e).__name__})"
    if n < 1:
        return False, "no CUDA device"
    return True, ""


def describe() -> dict[str, Any]:
    """CuPy's version, CUDA runtime and device count, or why it is not usable (`info --json`)."""
    try:
        cp = _import()
    except Exception as e:  # ImportError, or a CuPy built for another CUDA
        return {"present": False, "reason": error_text(e)}
    out: dict[str, Any] = {"present": True, "version": cp.__version__}
    try:
        rv = cp.cuda.runtime.runtimeGetVersion()
        out["cuda_runtime"] = f"{rv // 1000}.{(rv % 1000) // 10}"
        out["devices"] = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        out["devices"] = 0
        out["reason"] = error_text(e)
    return out
