"""CUZK_TIMING / CUZK_NTT_H tenures, TIMELINE and tracing lines, as a daemon prints them."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from gpuscope import parsers
from gpuscope.schemas import COMPONENT_COLUMNS, RECORD_COLUMNS, TIMELINE_COLUMNS
from tests.conftest import EXAMPLES

NTT = ("CUZK_NTT_H: d_b_alloc={a}ms ntt_kernels={n}ms coset_intt_sync=113ms msm_init=5ms "
       "msm_invoke=631ms msm_dtor=2ms total={t}ms")

# two workers; CPU-side lines of worker 1 (prep_msm, b_g2_msm, split_vectors) land
# inside worker 0's tenure and the other way round
TWO_WORKERS = "\n".join([
    "CUZK_TIMING: d_a_cache allocated 512 MiB on gpu 0",
    "CUZK_TIMING: split_vectors_ms=40 setup_to_split_ms=43",                  # 2 cpu
    "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=0",                         # 3 tenure 0
    "CUZK_TIMING: split_vectors_ms=64 setup_to_split_ms=67",                  # 4 cpu (worker 1)
    NTT.format(a=700, n=1694, t=3146),                                        # 5
    "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=3146",                               # 6
    "CUZK_TIMING: prep_msm_ms=1755",                                          # 7 cpu inside tenure
    "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",                               # 8
    "CUZK_TIMING: gpu_tid=0 batch_add_ms=399",                                # 9
    "CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_total_ms=3741",               # 10
    "CUZK_TIMING: mutex_held_ms=3745 total_start_fn_ms=3790",                 # 11 end tenure 0
    "CUZK_TIMING: pre_lock_cpu_ms=2 mutex_wait_ms=3851",                      # 12 tenure 1
    "CUZK_TIMING: b_g2_msm_ms=441 num_circuits=1",                            # 13 cpu (worker 0)
    NTT.format(a=1, n=5417, t=6169),                                          # 14
    "CUZK_TIMING: async_dealloc_ms=7",                                        # 15 cpu
    "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=6169",                               # 16
    "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",                               # 17
    "CUZK_TIMING: gpu_tid=0 batch_add_ms=396",                                # 18
    "CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_total_ms=6761",               # 19
    "CUZK_TIMING: mutex_held_ms=6764 total_start_fn_ms=10656",                # 20
    "CUZK_TIMING: set pool release threshold to MAX on gpu 0",                # 21 info
]) + "\n"


def _dtypes(df):
    return {c: str(t) for c, t in df.dtypes.items()}


def test_two_workers_cpu_lines_are_not_attributed():
    p = parsers.parse_log(TWO_WORKERS)
    assert p.format == "cuzk"
    assert p.total_lines == 21 and p.timing_lines == 19  # the two info lines are not timing lines
    assert p.skipped.empty
    r = p.records
    assert list(r["first_line"]) == [3, 12] and list(r["last_line"]) == [11, 20]
    assert list(r["held_ms"]) == [3745.0, 6764.0] and r["complete"].all()
    assert list(r["n_gpus"]) == [1, 1]
    c = p.components.set_index("line")
    for ln in (2, 4, 7, 13, 15):
        assert (c.loc[[ln], "record"] == -1).all(), ln
    assert c.loc[7, "component"] == "prep_msm" and c.loc[7, "value_ms"] == 1755.0
    assert (c.loc[[5, 6, 8, 9, 10, 11], "record"] == 0).all()
    assert (c.loc[[12, 14, 16, 20], "record"] == 1).all()
    ntt = p.components[p.components["source"] == "CUZK_NTT_H"]
    assert list(ntt["gpu"].unique()) == [0]
    assert ntt.loc[ntt["component"] == "ntt_kernels", "value_ms"].tolist() == [1694.0, 5417.0]
    b = p.components[p.components["component"] == "b_g2_msm"]
    assert b["value_ms"].tolist() == [441.0]  # num_circuits is a count, not a time
    assert _dtypes(p.components) == COMPONENT_COLUMNS and _dtypes(r) == RECORD_COLUMNS


def test_two_gpu_tenure_interleaved_blocks():
    text = "\n".join([
        "CUZK_TIMING: pre_lock_cpu_ms=0 mutex_wait_ms=12",
        NTT.format(a=2, n=900, t=1650),
        NTT.format(a=3, n=950, t=1700),
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=1650",
        "CUZK_TIMING: gpu_tid=1 ntt_msm_h_ms=1700",
        "CUZK_TIMING: prep_msm_ms=1800",
        "CUZK_TIMING: gpu_tid=1 barrier_wait_ms=100",
        "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=150",
        "CUZK_TIMING: gpu_tid=0 batch_add_ms=400",
        "CUZK_TIMING: gpu_tid=1 batch_add_ms=402",
        "CUZK_TIMING: gpu_tid=1 tail_msm_ms=197 gpu_total_ms=2399",
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=198 gpu_total_ms=2398",
        "CUZK_TIMING: mutex_held_ms=2405 total_start_fn_ms=2500",
    ])
    p = parsers.parse_log(text)
    assert len(p.records) == 1 and p.records["n_gpus"].iloc[0] == 2
    c = p.components
    ntt = c[c["component"] == "ntt_kernels"]
    assert ntt["gpu"].tolist() == [0, 1] and ntt["value_ms"].tolist() == [900.0, 950.0]
    bw = c[c["component"] == "barrier_wait"].set_index("gpu")["value_ms"]
    assert bw[0] == 150.0 and bw[1] == 100.0
    assert c.loc[c["component"] == "prep_msm", "record"].tolist() == [-1]
    assert c.loc[c["component"] == "mutex_held", "gpu"].tolist() == [-1]


def test_cut_off_tenure_and_truncated_last_line():
    text = TWO_WORKERS + "CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5\n" + "CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=12"
    p = parsers.parse_log(text)
    assert list(p.records["complete"]) == [True, True, False]
    assert math.isnan(p.records["held_ms"].iloc[2])
    assert p.skipped["line"].tolist() == [23]
    assert "ms unit" in p.skipped["reason"].iloc[0]


@pytest.mark.parametrize("bad, why", [
    ("CUZK_TIMING: mutex_held_ms=abc total_start_fn_ms=3790", "not a number"),
    ("CUZK_TIMING: mutex_held_ms=3745 #$garbage", "unreadable field"),
    ("CUZK_TIMING: mutex_held_ms=3745x", "not a number"),
    ("CUZK_TIMING: mutex_held_ms=", "not a number"),
    ("CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_tot", "unreadable field"),
    ("CUZK_TIMING: mutex_he", "truncated"),
    ("CUZK_NTT_H: d_b_alloc=1ms ntt_kernels=nanms", "not a number"),
])
def test_damaged_lines_are_skipped_with_reason(bad, why):
    lines = TWO_WORKERS.splitlines()
    lines[10] = bad  # the first tenure's held line
    p = parsers.parse_log("\n".join(lines) + "\n")
    assert p.skipped["line"].tolist() == [11]
    assert why in p.skipped["reason"].iloc[0]
    assert p.skipped["text"].iloc[0] == bad[:120]
    # the damaged held line is lost; the next mutex_wait line still opens a tenure
    assert p.records["complete"].tolist() == [False, True]


def test_decimal_values_take_the_slow_path_and_negative_times_are_damage():
    p = parsers.parse_log("CUZK_TIMING: prep_msm_ms=17.5\nCUZK_TIMING: async_dealloc_ms=-1\n")
    assert p.components["value_ms"].tolist() == [17.5]
    assert p.skipped["line"].tolist() == [2] and "negative time" in p.skipped["reason"].iloc[0]
    assert p.timing_lines == 2


def test_timeline_lines():
    text = "\n".join([
        "TIMELINE,0,SYNTH_START,job-1,partition=0",
        "TIMELINE,2226,SYNTH_END,job-1,partition=0,synth_ms=2226",
        "TIMELINE,2227,GPU_QUEUE,job-1,monolithic",
        "TIMELINE,2228,GPU_PICKUP,job-1,worker=1",
        "TIMELINE,2230,GPU_START,job-1,worker=1,partition=0",
        "TIMELINE,5000,GPU_END,job-1,worker=1,partition=0,gpu_ms=2770",
        "TIMELINE,oops,GPU_END,job-1,worker=1",
    ])
    p = parsers.parse_log(text)
    t = p.timeline
    assert _dtypes(t) == TIMELINE_COLUMNS
    assert t["event"].tolist() == ["SYNTH_START", "SYNTH_END", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END"]
    assert t["partition"].tolist() == [0, 0, -1, -1, 0, 0]
    assert t["worker"].tolist() == [-1, -1, -1, 1, 1, 1]
    assert t["synth_ms"].iloc[1] == 2226.0 and t["gpu_ms"].iloc[5] == 2770.0
    assert t["offset_ms"].iloc[5] == 5000.0 and t["job_id"].iloc[0] == "job-1"
    assert p.skipped["line"].tolist() == [7]
    assert p.records.empty and _dtypes(p.records) == RECORD_COLUMNS
    assert p.components.empty and _dtypes(p.components) == COMPONENT_COLUMNS


def test_tracing_lines_with_ansi_and_partition_some():
    esc = "\x1b"
    text = "\n".join([
        f"{esc}[2m2026-03-01T12:00:00.123456Z{esc}[0m {esc}[32m INFO{esc}[0m {esc}[2mcuzk_core::engine{esc}[0m: GPU_TIMING hot_path pre-prove overhead "
        f"{esc}[3mworker_id{esc}[0m{esc}[2m={esc}[0m0 partition=Some(3) status_ms=0 fail_check_ms=0 mark_busy_ms=0 total_overhead_ms=1",
        "2026-03-01T12:00:02.500000Z  INFO cuzk_core::engine: FIN_TIMING finalizer partition worker_id=1 partition=Some(3) finish_ms=410 drop_res_ms=1 lock_wait_ms=0 process_ms=2 total_ms=413",
        "2026-03-01T12:00:02.600000Z  INFO cuzk_core::engine: FIN_TIMING malloc_trim (success path) job_id=abc partition=3 malloc_trim_ms=12",
        "2026-03-01T12:00:02.700000Z  INFO cuzk_core::engine: FIN_TIMING finalizer partition worker_id=1 partition=None finish_ms=4x",
    ])
    p = parsers.parse_log(text)
    c = p.components
    g = c[c["source"] == "GPU_TIMING"]
    assert g["component"].tolist() == ["gpu_timing.status", "gpu_timing.fail_check", "gpu_timing.mark_busy", "gpu_timing.total_overhead"]
    assert (g["worker"] == 0).all() and (g["partition"] == 3).all()
    assert g["ts"].iloc[0] == pytest.approx(datetime.fromisoformat("2026-03-01T12:00:00.123456+00:00").timestamp())
    f = c[c["source"] == "FIN_TIMING"].set_index("component")
    assert f.loc["fin_timing.finish", "value_ms"] == 410.0 and f.loc["fin_timing.total", "worker"] == 1
    assert f.loc["fin_timing.malloc_trim", "partition"] == 3 and f.loc["fin_timing.malloc_trim", "worker"] == -1
    assert (c["record"] == -1).all()
    assert p.skipped["line"].tolist() == [4]


@pytest.mark.parametrize("prefix, expect", [
    ("2026-11-30T14:30:00.5Z ", "2026-11-30T14:30:00.5+00:00"),
    ("2026-11-30T14:30:00.123456789Z ", "2026-11-30T14:30:00.123456+00:00"),
    ("2026-11-30T15:30:00+01:00 ", "2026-11-30T14:30:00+00:00"),
    ("2026-11-30 14:30:00,250 ", "2026-11-30T14:30:00.25+00:00"),
    ("[pod/cuzk-0/daemon] 2026-11-30T14:30:00Z ", "2026-11-30T14:30:00+00:00"),
    ("cuzk-1  | 2026-11-30T14:30:00Z ", "2026-11-30T14:30:00+00:00"),
])
def test_prefix_times(prefix, expect):
    text = prefix + "CUZK_TIMING: prep_msm_ms=1755\n" + prefix + "TIMELINE,5,GPU_START,j,worker=0\n"
    p = parsers.parse_log(text)
    want = datetime.fromisoformat(expect).timestamp()
    assert p.components["ts"].iloc[0] == pytest.approx(want, abs=1e-6)
    assert p.timeline["ts"].iloc[0] == pytest.approx(want, abs=1e-6)
    assert p.components["value_ms"].iloc[0] == 1755.0


def test_journald_prefix_is_local_time_of_the_current_year():
    now = datetime.now()
    stamp = datetime(now.year, 1, 2, 3, 4, 5)
    text = f"{stamp.strftime('%b %d %H:%M:%S')} prover-7 cuzk-daemon[48121]: CUZK_TIMING: prep_msm_ms=9\n"
    p = parsers.parse_log(text)
    assert p.components["ts"].iloc[0] == pytest.approx(stamp.timestamp())


def test_generated_example_reads_whole():
    p = parsers.parse_log(EXAMPLES / "cuzk_daemon.log")
    assert p.format == "cuzk" and p.skipped.empty
    assert p.complete_records == 40 == len(p.records)
    assert p.records["ts_start"].notna().all()
    text = (EXAMPLES / "cuzk_daemon.log").read_text().splitlines()
    c = p.components.sample(50, random_state=1)
    for _, row in c.iterrows():  # every value's line number points at its text
        name = row["component"].split(".")[-1]
        assert name in text[int(row["line"]) - 1], (row["line"], name)
    held = p.components[p.components["component"] == "mutex_held"]
    assert held["value_ms"].tolist() == p.records["held_ms"].tolist()


def test_generator_two_gpus_and_damage(tmp_path, capsys):
    from tools import gen_daemon_log

    out = tmp_path / "d.log"
    gen_daemon_log.main(["--partitions", "30", "--gpus", "2", "--prefix", "journald", "--damage", "0.05",
                         "--seed", "3", "-o", str(out)])
    damaged = int(capsys.readouterr().err.split(",")[1].split()[0])
    assert damaged > 0
    p = parsers.parse_log(out)
    assert len(p.skipped) == damaged
    ok = p.records[p.records["complete"]]
    assert (ok["n_gpus"] == 2).all() and len(ok) >= 30 - damaged
    assert p.components["ts"].notna().all()
