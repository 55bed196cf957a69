"""Issue 33 class 10, the fleet's history (gpuscope/analysis/rules/coarse.py): a DCGM/Prometheus
history at 1 reading/s where a run averages 0.8 GB/s host-to-device for 39 s with the GPU mostly
idle is no upload-bound run; the report says what the readings show (the SMs idle while PCIe is
nearly quiet: the host side, likelier than copies) at LOW, the confidence 1 s readings allow."""

from __future__ import annotations

from types import SimpleNamespace

from gpuscope.analysis import analyze
from gpuscope.sources import open_source
from tests.test_truthcap_rates import _by_id, _second_capture


def test_a_loader_starved_fleet_history_reads_host_side_at_low(tmp_path):
    d = _by_id(analyze(open_source(_second_capture(tmp_path, [(12.0, 0.8)], repeat=39), line_rate=50.0)))
    assert "upload_bound_pageable" not in d and "h2d_bound" not in d
    c = d["copies_averaged"]
    assert c.severity == "low"
    assert "idled 88% of its working time while PCIe stayed nearly quiet" in c.summary
    assert "host-side work" in c.summary and "1 s apart" in c.summary
    assert c.evidence["gpu_idle_share"] == 0.88
    assert "data loader" in c.recommendation and "pinned" not in c.recommendation
    assert not [x for x in d.values() if x.severity in ("high", "medium")]


def test_the_same_trickle_beside_a_busy_gpu_names_no_host_side():
    # what would make it fire falsely: a GPU busy 70% of its working time under the same trickle
    # of copies (the copy rules call coarse_trickle with these figures): nothing says host side
    from gpuscope.analysis.rules.coarse import coarse_trickle

    f = SimpleNamespace(pcie=SimpleNamespace(resolution_s=1.0, line_rate_gbs=50.0))  # (GpuFigures: only .pcie is read)
    b = {"total_s": 39.0}
    diag, _ = coarse_trickle(f, SimpleNamespace(working_s=39.0, busy_fraction=0.7), b, 0.8, "rx")
    assert diag.severity == "low" and "host-side" not in diag.summary and "gpu_idle_share" not in diag.evidence
    diag, _ = coarse_trickle(f, SimpleNamespace(working_s=39.0, busy_fraction=0.12), b, 0.8, "rx")
    assert "host-side" in diag.summary and diag.evidence["gpu_idle_share"] == 0.88
