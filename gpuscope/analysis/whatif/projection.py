"""The pinned what-if of one opened source: its timing log, with what its run directory says
(bytes per partition, workers, synthesis threads, GPUs, host budget) and its line rate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuscope.analysis.whatif.predict import WhatIf, WhatIfUnavailable, predict_pinned

if TYPE_CHECKING:
    from gpuscope.sources import Source


def whatif_for(source: Source, *, abc_bytes: float | None = None) -> WhatIf:
    """Predict `source` with pinned uploads at its line rate. `abc_bytes` (the user's
    --abc-bytes) wins over the run's meta.json. Raises WhatIfUnavailable."""
    if not source.model.vocabulary.cuzk:
        raise WhatIfUnavailable("the pinned what-if replays the CuZK prover's pipeline (synthesis, a mutex per GPU, "
                                "prep at a barrier); this log is not one, so its prediction would not mean anything")
    meta = source.meta
    return predict_pinned(
        source.require_log(),
        line_rate_gbs=source.line_rate_gbs,
        line_rate_source=source.line_rate_source,
        bytes_per_partition=abc_bytes or meta.bytes_per_partition,
        bytes_source="--abc-bytes" if abc_bytes else "run meta.json",
        workers=meta.workers_per_gpu,
        synth_threads=meta.synth_threads,
        gpus=meta.workload_gpus,
        budget_slots=meta.budget_slots,
    )


def whatif_doc(source: Source, *, abc_bytes: float | None = None) -> dict[str, Any]:
    """The projection as JSON: WhatIf.to_json() with "available": true, or
    {"available": false, "reason": ...} when the source lacks what it needs."""
    if source.log is None:
        return {"available": False, "reason": source.no_log_reason or "the source has no timing lines"}
    try:
        w = whatif_for(source, abc_bytes=abc_bytes)
    except WhatIfUnavailable as e:
        return {"available": False, "reason": str(e)}
    return {"available": True, **w.to_json()}
