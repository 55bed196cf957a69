"""The `analyze --json` document's parts as typed dicts, version 2: every key once, for mypy.

gpuscope.analysis.document builds them and re-exports every name here. This module is imported
only where types are checked (`if TYPE_CHECKING:`, tests that read the classes): at run time a
document part is a plain dict and document.py names each of these `dict`, because creating 58
TypedDict classes (~500 annotated keys, each compiled as a forward reference) cost ~13 ms of
every start-up, a 12-line log's analyze included (docs/BENCHMARKS.md, "Start-up").
tests/test_layers.py holds that no module imports it at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, final

if TYPE_CHECKING:
    pass

__all__ = [
    "ActiveDoc",
    "ActiveIdleGapsDoc",
    "AnalysisDoc",
    "BoundsDoc",
    "BurstsDoc",
    "ClassName",
    "ClassesDoc",
    "ClocksDoc",
    "ComponentDoc",
    "DirectionDoc",
    "GapBucketDoc",
    "GapDistributionDoc",
    "HostOpDoc",
    "LinkDoc",
    "LogDoc",
    "LogPcieDoc",
    "MemoryDoc",
    "OptionsDoc",
    "PausesDoc",
    "PciePhaseDoc",
    "PipeName",
    "PipesDoc",
    "PowerDoc",
    "PowerLimitDoc",
    "RankCollectivesDoc",
    "RankCopyDoc",
    "RankErrorDoc",
    "RankRowCommonDoc",
    "RankRowDoc",
    "RanksCollectivesDoc",
    "RanksDoc",
    "RoleDoc",
    "RunRankCopyDoc",
    "RunRankRowDoc",
    "SamplesActivityDoc",
    "SamplesDoc",
    "SamplesGpuDoc",
    "SamplesIdleGapsDoc",
    "SamplesPcieDoc",
    "SamplesReadDoc",
    "SharedDeviceDoc",
    "SourceDoc",
    "SplitDoc",
    "SplitRole",
    "SplitTotalsDoc",
    "StatDoc",
    "StragglerDoc",
    "StragglerMetric",
    "StragglerRuleDoc",
    "StreamKernelDoc",
    "ThrottleDoc",
    "ThrottleReasonDoc",
    "TimelineDoc",
    "TopKernelDoc",
    "TraceActivityDoc",
    "TraceDeviceDoc",
    "TraceDeviceNameDoc",
    "TraceDoc",
    "TraceGapDoc",
    "TraceIdleGapsDoc",
    "TraceInfoDoc",
    "TraceMemcpyDoc",
    "TraceMemsetDoc",
    "TraceOptionsDoc",
    "TracePhaseDoc",
    "TraceRankRowDoc",
    "TraceStreamDoc",
    "WaitsDoc",
    "WholeDoc",
    "WorkerDoc",
]


class OptionsDoc(TypedDict):
    line_rate_gbs: float | None     # the pinned H2D line rate every part reads (GB/s, 1e9)
    line_rate_source: str           # option | meta | cache | link | trace | default
    abc_bytes: int | None           # bytes uploaded per record, when given


class SourceDoc(TypedDict):
    path: str
    kind: str                       # a log's format (lines, cuzk, ...), else trace | samples | benchmark_table | ranks
    model: str | None               # the role model's name (null: nothing was analyzed by roles)
    vocabulary: dict[str, Any] | None   # the model's words (rolemodel.Vocabulary.to_json)
    options: OptionsDoc | None


class ComponentDoc(TypedDict):
    role: str
    count: int
    sum_ms: float | None
    mean_ms: float | None
    median_ms: float | None
    p10_ms: float | None
    p90_ms: float | None
    cv: float | None


class PciePhaseDoc(TypedDict, total=False):
    """The NVML samples taken inside one phase (evidence.log pcie phases; compare.figures.pcie_per_phase
    gives the first four): medians GB/s, SM activity 0..1."""

    samples: int
    rx_gbs_median: float | None
    tx_gbs_median: float | None
    sm_active_median: float | None
    rx_gbs_p90: float | None
    rx_share_of_line_rate: float | None
    duration_median_s: float | None
    sample_interval_s: float | None
    gb_per_phase_median: float | None
    rx_gbs_mean: float | None
    rx_mean_share_of_line_rate: float | None


class LogPcieDoc(TypedDict):
    """The NVML samples joined to the log's phases (analysis._pcie, LogPart.pcie_phases)."""

    phases: NotRequired[dict[str, PciePhaseDoc]]  # by phase ("(none)": outside every phase); absent: no phase times
    samples: int                    # sample rows read
    phases_from: str | None         # what the phase times came from (evidence.log.phases.build_phases)
    line_rate_gbs: float | None
    skipped_sample_rows: int        # malformed rows the samples reader skipped
    note: NotRequired[str]          # why there are no phases


class RoleDoc(TypedDict):
    """A component's role and how it was given (RoleModel.provenance)."""

    role: str | None                # a SPLIT_ROLES role, "whole", or null: no role (its time is `other`)
    how: str


class WholeDoc(TypedDict):
    """The component that is the whole (the held time), and how it was found."""

    name: str | None
    how: str


class SplitDoc(TypedDict):
    """The split's sums (ms) and shares of the held time over all complete records
    (evidence.log.split.split_totals); a role no component of the log has: null."""

    held_ms: float | None
    h2d_ms: float | None
    gpu_compute_ms: float | None
    cpu_stall_ms: float | None
    d2h_ms: float | None
    other_ms: float | None
    h2d_share: float | None
    gpu_compute_share: float | None
    cpu_stall_share: float | None
    d2h_share: float | None
    other_share: float | None
    inconsistent_records: int
    upload_gbs: float | None        # median over tenures of the logged bytes / h2d time; null without byte counts


class SplitTotalsDoc(SplitDoc):
    """The split's sums as the log part keeps them (LogPart.split): every role's, a role no
    component has at 0.0 (the document's SplitDoc nulls it: split_doc), and the log's records."""

    records: int


SplitRole = Literal["h2d", "gpu_compute", "cpu_stall", "d2h", "other"]




class WorkerDoc(TypedDict):
    intervals: int
    busy_s: float | None
    busy_fraction: float | None


class TimelineDoc(TypedDict):
    """The records' timeline (evidence.log.timeline_summary, keys TIMELINE_KEYS): from TIMELINE
    events, else from the stamped tenures; every key present, null when unknown."""

    source: str | None              # TIMELINE | tenures | null
    wall_s: float | None
    gpu_span_s: float | None
    gpu_busy_s: float | None
    gpu_busy_fraction: float | None
    idle_gaps: int
    idle_total_s: float | None
    idle_largest_s: float | None
    partitions: int
    synth_s: float | None
    synth_gpu_overlap_s: float | None
    synth_overlap_fraction: float | None
    synth_parallelism: int
    gpu_ms_median: float | None
    gpu_compute_fraction: float | None
    workers: dict[str, WorkerDoc]
    unpaired_events: int
    steady_busy_fraction: float | None  # the records' cover of the run in their steady state


class BoundsDoc(TypedDict):
    """The GPU and CPU floors, the observed time and which binds (evidence.log.bounds.compute_bounds)."""

    partitions: int
    partitions_basis: str
    gpu_per_partition_ms: float | None
    gpu_basis: str
    gpu_floor_s: float | None
    synth_ms: float | None
    synth_parallelism: int | None
    cpu_other_ms: float | None
    cpu_workers: int | None
    cpu_per_partition_ms: float | None
    synth_floor_s: float | None
    cpu_work_floor_s: float | None
    cpu_floor_s: float | None
    observed_s: float | None
    observed_basis: str
    binding: str | None             # gpu | cpu | null
    observed_over_floor: float | None
    observed_over_gpu_floor: float | None
    gap_to_floor_s: float | None
    assumptions: list[str]


class LogDoc(TypedDict):
    format: str
    records: int                    # complete records (tenures, steps)
    steps_per_record: int           # a log printing every K-th step: each record stands for K steps
    read_notes: list[str]           # what the parser assumed (a unit not printed, lines kept apart)
    incomplete_records: int
    skipped_lines: int
    total_lines: int
    timing_lines: int
    components: dict[str, ComponentDoc]
    split: SplitDoc                 # sums and shares by role; a role no component has: null
    timeline: TimelineDoc
    bounds: BoundsDoc
    roles: dict[str, RoleDoc] | None  # by component (RoleModel.provenance)
    whole: WholeDoc | None          # the component that is the whole (the held time), and how it was found
    pcie: LogPcieDoc | None         # the NVML samples joined to the log's phases; null without samples


class GapBucketDoc(TypedDict):
    from_s: float
    to_s: float | None              # null: no upper end
    count: int
    total_s: float


class GapDistributionDoc(TypedDict):
    p50_s: float | None
    p90_s: float | None
    buckets: list[GapBucketDoc]     # activity.GAP_BUCKETS_S


class ActiveIdleGapsDoc(TypedDict):
    """The SM-idle runs inside the working time (activity.gap_figures)."""

    count: int
    total_s: float
    longest_s: float
    distribution: GapDistributionDoc


class SamplesIdleGapsDoc(TypedDict):
    """The SM-idle runs of a recording (activity.gap_stats). Pooled over several GPUs (and for no
    GPU): count, total and longest alone, with `summed_over_gpus`."""

    count: int
    total_s: float
    longest_s: float
    leading_s: NotRequired[float]   # before the first sign of work (the whole recording when there is none)
    trailing_s: NotRequired[float]  # after the last
    distribution: NotRequired[GapDistributionDoc]
    summed_over_gpus: NotRequired[int]  # GPU-seconds over this many GPUs (may exceed the span)


ClassName = Literal["computing", "both", "transferring", "idle_quiet", "idle", "unknown"]  # samplegrid.CLASSES
PipeName = Literal["sm_occupancy", "dram_active", "tensor_active", "fp16_active", "fp32_active", "fp64_active"]


class ClassesDoc(TypedDict):
    """The share of the time in each class (samplegrid.CLASSES); null: no time to share."""

    computing: float | None
    both: float | None
    transferring: float | None
    idle_quiet: float | None
    idle: float | None
    unknown: float | None


class PipesDoc(TypedDict):
    """What the units did while the SMs computed (GPM only: samplegrid.pipes_while_computing); a
    pipe the samples do not read is absent."""

    computing_s: float
    sm_active: float | None
    sm_occupancy: NotRequired[float | None]
    dram_active: NotRequired[float | None]
    tensor_active: NotRequired[float | None]
    fp16_active: NotRequired[float | None]
    fp32_active: NotRequired[float | None]
    fp64_active: NotRequired[float | None]


class PausesDoc(TypedDict):
    count: int
    total_s: float
    longest_s: float
    longest_at_s: float | None      # from the recording's start


class ActiveDoc(TypedDict):
    """The active span (first to last sign of work) less its pauses (activity._active_figures)."""

    t_start: float
    t_end: float
    span_s: float
    working_s: float
    busy_fraction: float | None     # computing, of the working time
    copy_fraction: float | None     # a copy ran (RX or TX above the trickle); null: PCIe not measured
    utilization_busy_fraction: float | None
    idle_fraction: float | None
    idle_gaps: ActiveIdleGapsDoc
    classes: ClassesDoc             # of the working time
    pcie_measured_share: float | None
    pcie_quiet_share: float | None
    pipes: PipesDoc | None          # GPM only
    pauses: PausesDoc


class BurstsDoc(TypedDict):
    """One direction's bursts (runs of readings above the busy threshold: transfers.direction_stats)."""

    count: int
    total_s: float
    median_readings: float | None
    median_s: float | None
    resolved_count: int             # bursts of at least MIN_RESOLVED_READINGS readings
    resolved: bool                  # the median burst is that long: its interior rate is the link's
    interior_readings: int
    interior_gbs_median: float | None
    interior_gbs_p90: float | None
    busy_gbs_median: float | None
    sm_activity_during: float | None
    gb_per_burst_median: float | None


class DirectionDoc(TypedDict):
    """One PCIe direction's rates (GB/s) and bursts (transfers.direction_stats)."""

    p50_gbs: float | None
    p90_gbs: float | None
    p99_gbs: float | None
    max_gbs: float | None
    mean_gbs: float | None
    gb: float
    busy_s: float
    near_line_rate_s: float
    bursts: BurstsDoc


class SamplesPcieDoc(TypedDict):
    """The PCIe traffic of the recording (activity._pcie_figures)."""

    source: str | None              # where RX/TX came from; null: PCIe not measured
    resolution_s: float | None
    line_rate_gbs: float
    line_rate_source: str
    busy_threshold_gbs: float
    near_line_rate_threshold_gbs: float
    time_near_line_rate_s: float
    rx: DirectionDoc                # host to GPU
    tx: DirectionDoc                # GPU to host


class StatDoc(TypedDict):
    """median, min and max of the finite readings; null: none."""

    median: float | None
    min: float | None
    max: float | None


class MemoryDoc(TypedDict):
    used_max_mib: float | None
    used_median_mib: float | None
    total_mib: float | None         # meta.json's
    fraction: float | None


class PowerDoc(TypedDict):
    median_w: float | None
    min_w: float | None
    max_w: float | None
    mean_w: float | None            # time-weighted


class ClocksDoc(TypedDict):
    sm_mhz: StatDoc
    sm_busy_median_mhz: float | None  # the SM clock's median while computing
    sm_max_mhz: float | None        # meta.json's maximum, else the highest reading
    sm_max_basis: str               # meta | highest reading
    mem_mhz: StatDoc


class ThrottleReasonDoc(TypedDict):
    s: float                        # seconds with the reason set
    busy_s: float                   # of them, with the SMs busy
    busy_fraction: float | None     # of the busy time


class ThrottleDoc(TypedDict):
    """Seconds with each clock-event reason set (device.throttle_figures); not recorded: that alone."""

    recorded: bool
    recorded_s: NotRequired[float]
    busy_s: NotRequired[float]
    reasons: NotRequired[dict[str, ThrottleReasonDoc]]  # by device.REASONS name; one never set: absent


class LinkDoc(TypedDict):
    """The PCIe link meta.json read when the recording started (gpuscope.gpuinfo), with its rates."""

    downgraded: NotRequired[bool | None]
    gen_max: NotRequired[int | None]
    gen_now: NotRequired[int | None]
    width_max: NotRequired[int | None]
    width_now: NotRequired[int | None]
    max_gbs: float | None
    now_gbs: float | None
    basis: str


class PowerLimitDoc(TypedDict, total=False):
    """meta.json's board power limits (W), those the recorder read."""

    enforced_w: float
    default_w: float


class SamplesGpuDoc(TypedDict, total=False):
    """One GPU's figures from its NVML samples (evidence.samples.activity.gpu_figures); docs/ANALYZE.md
    "From NVML samples alone" (evidence.samples.figures is the rules' view of them)."""

    source: str | None              # gpm_sm_active | utilization (several GPUs: mixed, when they differ)
    resolution_s: float | None
    time_basis: str
    t_start: float | None
    t_end: float | None
    wall_s: float
    readings: int
    coverage: float | None
    busy_fraction: float | None     # computing, of the whole recording
    copy_fraction: float | None     # a copy ran (PCIe RX or TX busy); None: PCIe not measured
    idle_fraction: float | None
    idle_gaps: SamplesIdleGapsDoc
    classes: ClassesDoc             # share of the time in each class
    utilization_busy_fraction: float | None
    active: ActiveDoc | None        # the working time's figures; None: no GPU work
    pcie: SamplesPcieDoc
    memory: MemoryDoc
    power: PowerDoc
    clocks: ClocksDoc
    temperature_c: StatDoc
    throttle: ThrottleDoc
    link: LinkDoc | None
    power_limit: PowerLimitDoc | None


class SamplesActivityDoc(SamplesGpuDoc, total=False):
    """`samples.activity` (Activity.to_json): one GPU's figures with `gpus` and `notes`; several GPUs:
    the figures pooled over them (said in `pooled`) and each GPU's own under `per_gpu`."""

    gpus: list[int]
    notes: list[str]
    per_gpu: dict[str, SamplesGpuDoc]
    pooled: str


class SamplesReadDoc(TypedDict):
    """What reading the samples file cost (gpuscope.sources: the samples reader's report)."""

    file: str
    format: str | None              # gpuscope | dmon | query-gpu ...
    rows: int
    dropped_rows: int
    unreadable_values: dict[str, int]  # by column
    nul_bytes: int
    nul_rows: int
    gpu_identity: NotRequired[dict[str, Any]]  # {column, gpus: {number: id}}: a query-gpu capture without `index`
    note: str | None


class SamplesDoc(TypedDict):
    activity: SamplesActivityDoc | None  # Activity.to_json(): busy/idle of every GPU the samples name
    read: SamplesReadDoc | None      # what reading the samples file cost (rows kept, dropped)


class TraceIdleGapsDoc(TypedDict):
    count: int
    total_s: float
    longest_s: float
    min_gap_s: float                # gaps shorter than this are not counted (trace_gaps.GAP_MIN_US)
    by_cause_s: dict[str, float]    # idle seconds per cause (trace_gaps.CAUSES); a cause with none: absent


class TraceDeviceDoc(TypedDict):
    """One rank's GPU over the traced span (evidence.trace.trace_activity.device_rows)."""

    rank: int
    device: int
    name: str                       # the GPU's name (deviceProperties)
    span_s: float
    busy_s: float                   # computing: kernels, memsets, device-to-device copies
    busy_fraction: float | None
    copy_fraction: float | None
    active_s: float                 # anything running
    kernel_s: float
    memcpy_s: float
    memset_s: float
    copy_kernel_overlap_s: float
    streams: list[int]


class TraceActivityDoc(TypedDict):
    """What the GPU did over the traced span (trace_analysis.TraceAnalysis.activity)."""

    source: str                     # "trace"
    resolution: str
    busy_fraction: float | None     # computing: kernels, memsets, device-to-device copies
    copy_fraction: float | None     # host/peer copies beside it, never in it
    idle_fraction: float | None
    kernel_fraction: float | None
    memcpy_fraction: float | None
    copy_kernel_overlap_fraction: float | None
    idle_gaps: TraceIdleGapsDoc
    span_s: float
    device_span_s: float
    t_start: float
    t_end: float
    epoch: bool                     # t_start/t_end are epoch seconds (else the trace's own clock)
    devices: list[TraceDeviceDoc]   # one row per rank and GPU


class TraceMemcpyDoc(TypedDict):
    """The copies of one direction and host memory (evidence.trace.trace_activity.memcpy_rows)."""

    direction: str                  # HtoD | DtoH | DtoD | PtoP | HtoH ...
    host_memory: str | None         # pinned | pageable | device | unknown ...
    count: int
    bytes: int
    ms: float
    gbs: float | None               # bytes / summed copy time (GB/s, 1e9)
    per_event_gbs_median: float | None
    trace_gbs_median: float | None  # the trace's own bandwidth argument
    devices: list[int]
    line_rate_share: NotRequired[float | None]   # host copies (HtoD, DtoH) with a line rate
    ms_at_line_rate: NotRequired[float | None]


class TraceMemsetDoc(TypedDict):
    memory: str | None
    count: int
    bytes: int
    ms: float
    gbs: float | None


class StreamKernelDoc(TypedDict):
    name: str                       # cut to trace_activity.NAME_CHARS
    count: int
    ms: float


class TraceStreamDoc(TypedDict):
    """One stream of one rank's GPU (evidence.trace.trace_activity.stream_rows): the `kernels` list."""

    rank: int
    device: int
    stream: int
    kernels: int
    kernel_ms: float
    kernel_overlap_ms: float        # kernels overlapping on the stream (damage: a stream runs one at a time)
    kernel_median_us: float | None
    kernel_p90_us: float | None
    memcpy_count: int
    memcpy_ms: float
    memset_count: int
    memset_ms: float
    busy_ms: float
    busy_fraction: float | None
    top_kernels: list[StreamKernelDoc]


class TopKernelDoc(TypedDict):
    """One of the kernels of most total time (evidence.trace.top_kernels)."""

    name: str
    short_name: str
    count: int
    total_ms: float
    share: float | None             # of all kernels' time
    median_us: float
    mean_us: float
    max_us: float


class HostOpDoc(TypedDict):
    name: str
    cat: str
    dur_ms: float
    covered_fraction: float
    thread: NotRequired[str | None]  # the thread's name, where the trace names its threads


class TraceGapDoc(TypedDict):
    """One of the longest idle gaps, with the host activity across it (evidence.trace.trace_gaps.gaps_json)."""

    rank: int
    device: int
    t_start: float
    offset_s: float                 # from the device's first event
    ms: float
    edge: bool                      # at the start or end of the span
    cause: str                      # trace_gaps.CAUSES
    launched_late: bool | None
    sync_at_start: bool
    host_traced_fraction: float
    host_op: HostOpDoc | None
    annotation: str | None


class TracePhaseDoc(TypedDict):
    """One annotated phase (evidence.trace.trace_phases.split_table): the `phases` list."""

    phase: str
    role: str | None                # guessed from its name (rolewords.guess_role); null: none
    count: int
    wall_ms: float
    gpu_busy_ms: float
    kernel_ms: float
    memcpy_ms: float
    htod_ms: float
    dtoh_ms: float
    mean_ms: float
    share_of_span: float | None
    gpu_idle_ms: float
    gpu_busy_fraction: float | None


class TraceDeviceNameDoc(TypedDict):
    rank: int
    device: int
    name: str


class TraceInfoDoc(TypedDict):
    """What was read (trace_analysis: the trace's files, ranks, devices, events, what was skipped)."""

    source: str
    files: list[str]
    ranks: list[int]
    devices: list[TraceDeviceNameDoc]
    span_s: float
    epoch_offset_s: float | None
    events: int
    skipped_events: int
    skipped_reasons: dict[str, int]
    counts: dict[str, int]
    truncated: bool
    reader: str
    notes: list[str]


class TraceOptionsDoc(TypedDict):
    line_rate_gbs: float
    line_rate_source: str


class TraceDoc(TypedDict):
    activity: TraceActivityDoc
    memcpy: list[TraceMemcpyDoc]
    memset: list[TraceMemsetDoc]
    kernels: list[TraceStreamDoc]
    top_kernels: list[TopKernelDoc]
    idle_gaps: list[TraceGapDoc]
    phases: list[TracePhaseDoc]
    trace: TraceInfoDoc
    options: TraceOptionsDoc


class RankCopyDoc(TypedDict):
    """A traced rank's copies by direction and host memory (TraceMemcpyDoc's first six keys)."""

    direction: str                   # HtoD | DtoH | DtoD | PtoP ...
    host_memory: str | None          # pinned | pageable | device | ...
    count: int
    bytes: int | None
    ms: float
    gbs: float | None


class RunRankCopyDoc(TypedDict):
    """A run's copies by direction: the mean PCIe rate of its NVML samples."""

    direction: str                   # rx | tx
    mean_gbs: float | None


class RankCollectivesDoc(TypedDict):
    """A traced rank's collectives (gpuscope.analysis.ranks.collectives)."""

    kind: str | None                 # nccl | gloo | c10d | null: none found
    count: int
    ms: float                        # the union of their intervals
    overlap_fraction: float | None   # of that time, the share a compute kernel ran beside
    names: list[str]                 # the first five names
    ms_per_step: float | None
    per_step_count: float | None


class RankRowCommonDoc(TypedDict):
    """What every rank's row holds (gpuscope.analysis.ranks.rank_row), a traced rank's or a run's."""

    name: str
    rank: int
    position: int                    # its place in name order
    kind: str                        # the rank's source kind (trace, rundir, log, samples)
    busy_fraction: float | None
    idle_fraction: float | None
    first_finding: str | None
    first_finding_severity: str | None
    t_start: float | None            # epoch seconds; null: not on a common clock
    t_end: float | None
    span_s: float | None
    idle_by_cause_s: dict[str, float]
    steps: int
    step_ms: float | None
    compute_ms: float | None
    compute_ms_per_step: float | None
    seconds: NotRequired[float]      # the rank's reading and analysis (ranks_run.analyze_one)


@final  # (a row is one of the two: `"error" in r` tells an error row from them)
class TraceRankRowDoc(RankRowCommonDoc):
    """A rank with a profiler trace: its copies from the trace, its collectives, its steps."""

    rank_known: bool                 # the trace names its rank (distributedInfo)
    copies: list[RankCopyDoc]
    collectives: RankCollectivesDoc


@final
class RunRankRowDoc(RankRowCommonDoc):
    """A rank without a trace (a run directory, a log, samples): its copies from the samples."""

    copies: list[RunRankCopyDoc]
    collectives: None
    command: str | None              # meta.json's command, joined


RankRowDoc = TraceRankRowDoc | RunRankRowDoc


class RankErrorDoc(TypedDict):
    """A rank that could not be read."""

    name: str
    rank: int
    error: str                       # the one-line reason


StragglerMetric = Literal["compute_ms_per_step", "compute_ms", "step_ms"]


class WaitsDoc(TypedDict):
    """How much longer the other ranks sat in collectives per step than the straggler."""

    straggler_ms_per_step: float
    others_median_ms_per_step: float
    others_extra_ms_per_step: float


class StragglerDoc(TypedDict):
    rank: int
    name: str
    metric: str                      # a StragglerMetric, or collective_ms_per_step (the one waiting least)
    what: str                        # the metric in words
    value_ms: float
    others_median_ms: float
    excess_ms: float
    ratio: float | None
    waits: WaitsDoc | None
    summary: str                     # the sentence the console prints


class RanksCollectivesDoc(TypedDict):
    kinds: list[str]
    ms_per_step: dict[str, float | None]     # by rank
    overlap_fraction_median: float | None


class StragglerRuleDoc(TypedDict):
    ratio: float                     # ranks.STRAGGLER_RATIO
    min_ms: float                    # ranks.STRAGGLER_MIN_MS
    metric: StragglerMetric          # what the ranks were compared by


class SharedDeviceDoc(TypedDict):
    """A device more than one rank names: the union of their activity on it (ranks.shared_devices)."""

    device: int
    ranks: list[int]
    span_s: float
    busy_s: float
    busy_fraction: float | None
    idle_s: float
    summed_busy_s: float


class RanksDoc(TypedDict):
    """A folder of per-rank traces or runs (gpuscope.analysis.ranks.combine, ranks_run.analyze_ranks)."""

    count: int
    inputs: str                      # traces | runs
    one_job: bool                    # ranks of one job (else each is analyzed alone, no straggler named)
    one_job_evidence: str
    table: list[RankRowDoc]          # one row per rank (ranks.rank_row)
    stragglers: list[StragglerDoc]
    collectives: RanksCollectivesDoc
    errors: list[RankErrorDoc]       # ranks that could not be read
    notes: list[str]
    rule: StragglerRuleDoc           # the straggler rule
    workers: NotRequired[int]        # processes used (ranks_run.analyze_ranks)
    seconds: NotRequired[float]      # wall time of the reading and analysis
    shared_devices: NotRequired[list[SharedDeviceDoc]]  # with the folder's own trace (analyze_run)


class AnalysisDoc(TypedDict):
    version: int
    source: SourceDoc
    log: LogDoc | None
    samples: SamplesDoc | None
    trace: TraceDoc | None
    table: dict[str, Any] | None     # a benchmark tool's table (Google Benchmark, nccl-tests, nsys stats)
    ranks: RanksDoc | None           # a folder of per-rank traces or runs: each rank's row (analysis.ranks)
    findings: list[dict[str, Any]]   # Diagnosis.to_json(), ranked
    first_cause: str | None
    what_if: dict[str, Any] | None
    evidence: dict[str, Any] | None
