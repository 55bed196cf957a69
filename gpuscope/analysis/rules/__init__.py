"""Diagnosis rules, every one of them: the rule engine and one module per concern.

engine (the @rule decorator: one signature `rule(ev: Evidence) -> list[Finding]`, one ranking) and
registry (the modules that declare rules, `run_rules(ev)`); the rules by what they look at: upload
(h2d_bound, pcie_underused) and tenure (cpu_stall_at_barrier, lock_convoy, unstable_component,
inconsistent_records, first_partition_warmup) over a log's RuleInput (evidence.log.rule_input, with
their number helpers); readback (d2h_bound over every source); activity (starved, underused),
sample_copies, link, copy_phase, copies, pauses, device (clocks, link, memory), bound, duty and gpus
over NVML samples (per_gpu: one check over every GPU); trace, kernel_mix, trace_link and pinned_rate
over a trace. The log checks (RuleInput -> [Diagnosis]), their thresholds and the input type stay
importable from here.

Severity thresholds are the module constants; docs/ANALYZE.md documents them.
Evidence holds numbers from this log only. Summaries and advice speak the model's words
(RoleModel.vocabulary): the CuZK prover's (tenures, partitions, a/b/c vectors, prep_msm)
only for its model, a step's or record's for any other program.
"""

from __future__ import annotations

from gpuscope.analysis.evidence.log.rule_input import NAN, RuleInput
from gpuscope.analysis.rules.tenure import (
    CONVOY_RATIO_HIGH,
    CONVOY_RATIO_MEDIUM,
    INCONSISTENT_MEDIUM,
    STABLE_CV,
    STALL_SHARE_FLOOR,
    STALL_SHARE_HIGH,
    STALL_SHARE_MEDIUM,
    UNSTABLE_EXPLAINED_HIGH,
    UNSTABLE_EXPLAINED_MEDIUM,
    UNSTABLE_MIN_CORR,
    UNSTABLE_MIN_CV,
    UNSTABLE_MIN_RECORDS,
    WARMUP_FACTOR,
    WARMUP_MIN_MS,
    cpu_stall_at_barrier,
    first_partition_warmup,
    inconsistent_records,
    lock_convoy,
    unstable_component,
)
from gpuscope.analysis.rules.upload import (
    H2D_SHARE_HIGH,
    H2D_SHARE_LOW,
    H2D_SHARE_MEDIUM,
    PCIE_SHARE_HIGH,
    PCIE_SHARE_MEDIUM,
    h2d_bound,
    pcie_underused,
)

__all__ = [
    "CONVOY_RATIO_HIGH", "CONVOY_RATIO_MEDIUM", "H2D_SHARE_HIGH", "H2D_SHARE_LOW", "H2D_SHARE_MEDIUM",
    "INCONSISTENT_MEDIUM", "NAN", "PCIE_SHARE_HIGH", "PCIE_SHARE_MEDIUM",
    "STABLE_CV", "STALL_SHARE_FLOOR", "STALL_SHARE_HIGH", "STALL_SHARE_MEDIUM", "UNSTABLE_EXPLAINED_HIGH",
    "UNSTABLE_EXPLAINED_MEDIUM", "UNSTABLE_MIN_CORR", "UNSTABLE_MIN_CV", "UNSTABLE_MIN_RECORDS",
    "WARMUP_FACTOR", "WARMUP_MIN_MS", "RuleInput", "cpu_stall_at_barrier", "first_partition_warmup",
    "h2d_bound", "inconsistent_records", "lock_convoy", "pcie_underused", "unstable_component",
]
