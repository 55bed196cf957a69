"""The pipeline on a real GPU (skipped cleanly without one): every mode, verified results."""

from __future__ import annotations

import json

import pytest

from gpuscope.workload.pipeline_types import PipelineConfig
from gpuscope.workload.runner import WorkloadRun

pytestmark = pytest.mark.gpu


def _run(tmp_path, **kw):
    cfg = PipelineConfig(**{"log_n": 12, "partitions": 4, "workers": 2, "synth_threads": 2,
                            "verify": True, **kw})
    steps = []
    run = WorkloadRun(cfg, backend="gpu", out=str(tmp_path / "run"), argv=["test"], on_setup=steps.append)
    run.prepare()
    assert any(m.startswith("warming the kernels up at 2^") for m in steps), steps
    run.start()
    return run.finish()


@pytest.mark.parametrize("mode", ["pageable", "pinned", "registered"])
def test_gpu_run_every_mode_verified(tmp_path, mode):
    out = _run(tmp_path, mode=mode)
    assert out.error is None, out.error
    assert (out.status, out.exit_code) == ("complete", 0)
    meta = json.loads((out.path / "meta.json").read_text())
    p = meta["pipeline"]
    assert p["partitions_done"] == 4 and p["verified"] == 4
    assert meta["setup"]["kernel_warmup_s"] > 0
    assert p["h2d_bytes"] == 4 * 4 * (1 << 12) * 32  # a, b, c, witness per partition
    if mode == "pinned":
        pool = p["host_memory"]["pool"]
        # prewarmed: every partition is a hit on a buffer pinned before the timed run
        assert pool["hits"] == 4 and pool["allocations"] <= 4 and pool["in_use_bytes"] == 0
        assert meta["setup"]["pinned_prewarm_buffers"] == pool["allocations"]
    if mode == "registered":
        assert p["host_memory"]["registrations"] == 16
        assert p["host_memory"]["registered_bytes_now"] == 0
    summ = json.loads((out.path / "summary.json").read_text())
    assert summ["log"]["records"] == 4 and summ["log"]["split"]["h2d_ms"] >= 0


def test_gpu_streamed_srs_in_chunks_matches_resident(tmp_path):
    # 2^12 points in chunks of 2^10: four chunks, double-buffered, partial sums added on the host
    out = _run(tmp_path, mode="pinned", srs_chunk_log=10, partitions=2)
    assert out.error is None and out.result.done == 2
    assert all(r.verified for r in out.result.results)


def test_gpu_large_size_uses_gpu_limb_sums(tmp_path):
    out = _run(tmp_path, mode="pinned", log_n=17, partitions=2, srs_chunk_log=15)
    assert out.error is None, out.error
    assert all(r.verified for r in out.result.results)
    meta = json.loads((out.path / "meta.json").read_text())
    assert "GPU limb sums" in meta["verify"]
