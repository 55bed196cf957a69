"""Shared pytest setup: the `gpu` marker skips cleanly where no GPU + CuPy is present."""

from __future__ import annotations

import functools
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


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    ok, why = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """No test reads or writes the user's ~/.cache/gpuscope (the bandwidth line-rate cache):
    analyses fall back to it, so a developer's measurement would change expected output."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
