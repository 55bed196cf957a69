"""Shared pytest setup: the `gpu` marker skips cleanly where no GPU + CuPy is present."""

from __future__ import annotations

import functools
import signal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = REPO / "examples"


@functools.cache
def gpu_available() -> tuple[bool, str]:
    """(ok, why not): CuPy importable and a CUDA device, asked once per session."""
    from gpuscope import cuda

    return cuda.available()


@functools.cache
def slow_tests() -> frozenset[str]:
    """tests/slow_tests.txt (tools/mark_slow.py): files and node ids `make check` leaves to `make test`."""
    path = Path(__file__).resolve().parent / "slow_tests.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


def _is_slow(nodeid: str) -> bool:
    slow = slow_tests()
    return nodeid in slow or nodeid.split("::")[0] in slow or nodeid.split("[")[0] in slow


def pytest_collection_modifyitems(config, items):
    for item in items:  # (make check: -m "not slow"; make test runs everything)
        if _is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
    if not any("gpu" in item.keywords for item in items):
        return
    ok, why = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# A suite started in the background of a shell without job control (`make test &` in a script,
# nohup) has SIGINT ignored, and every command a test starts would inherit that: the Ctrl-C tests
# then saw no Ctrl-C. Python's own handler here, as from a terminal, lets exec reset it to default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _stop_signals_restored():
    """Each test leaves the stop signals as it found them: a command run in this process (cli.main)
    ignores them once it is done (_done_with_stop_signals), and a later test's subprocess would
    inherit that (a Ctrl-C or SIGHUP test then saw its signal ignored, only in the whole suite)."""
    before = [signal.getsignal(s) for s in _STOP_SIGNALS]
    yield
    for s, h in zip(_STOP_SIGNALS, before, strict=True):
        if h is not None and signal.getsignal(s) != h:
            signal.signal(s, h)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """No test reads or writes the user's ~/.cache/gpuscope (the bandwidth line-rate cache):
    analyses fall back to it, so a developer's measurement would change expected output."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
