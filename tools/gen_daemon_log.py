#!/usr/bin/env python3
"""Generate a realistic cuzk daemon stderr log: a small simulation of the two-worker GPU
mutex pipeline printing the real formats (CUZK_TIMING, CUZK_NTT_H, TIMELINE, tracing
GPU_TIMING/FIN_TIMING) mixed with INFO chatter and backtrace-like noise.

Model, per partition (PoRep 32 GiB: 10 partitions per job):
  synthesis (CPU, 2 at a time, ~2.4 s) -> a worker (p % workers) picks it up, splits the
  vectors, waits for the GPU mutex; under the lock, per GPU: d_b_alloc (~700 ms the first
  time: pool warm-up), ntt_kernels = H2D upload of a/b/c (1.5 GiB; pageable: 0.28-5.5 GB/s,
  pinned: ~50 GB/s) + ~40 ms of NTT, coset_intt_sync ~113 ms, msm ~631 ms, then the
  barrier waits for the CPU's prep_msm (started when the worker asked for the lock,
  ~1.8 s, sometimes slow), batch_add ~401 ms, tail_msm ~197 ms. b_g2_msm runs on the CPU
  after the release. Lines are printed at their simulated times, so CPU-side lines land
  inside the other worker's tenure exactly as they do in a real log.

    python tools/gen_daemon_log.py --partitions 40 --seed 7 -o examples/cuzk_daemon.log
    python tools/gen_daemon_log.py --lines 1000000 --prefix iso -o bench-out/daemon_1m.log
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from datetime import UTC, datetime, timedelta

ABC_BYTES = 3 * 512 * 2**20  # a, b, c: 512 MiB each
T0 = datetime(2026, 11, 30, 14, 0, 0, tzinfo=UTC)
MODULES = ("cuzk_core::engine", "cuzk_core::memory", "cuzk_core::synth", "cuzk_server::rpc",
           "cuzk_core::pinned_pool", "bellperson::groth16::prover")


class Log:
    def __init__(self, prefix: str, rng: random.Random):
        self.prefix = prefix
        self.rng = rng
        self.items: list[tuple[float, int, str, bool]] = []  # (t_ms, seq, text, has_own_ts)
        self.seq = 0

    def emit(self, t: float, text: str, own_ts: bool = False) -> None:
        self.seq += 1
        self.items.append((t, self.seq, text, own_ts))

    def tracing(self, t: float, level: str, module: str, msg: str) -> None:
        self.emit(t, f"{iso(t, 6)} {level:>5} {module}: {msg}", own_ts=True)

    def render(self, out, limit: int | None) -> int:
        self.items.sort()
        n = 0
        for t, _, text, own in self.items:
            if limit is not None and n >= limit:
                break
            out.write(self.prefixed(t, text, own))
            out.write("\n")
            n += 1
        return n

    def prefixed(self, t: float, text: str, own: bool) -> str:
        p = self.prefix
        if p == "none" or (p == "iso" and own):
            return text
        if p == "iso":
            return f"{iso(t, 6)} {text}"
        if p == "docker":
            return f"{iso(t, 9)} {text}"
        dt = T0 + timedelta(milliseconds=t)
        return f"{dt.strftime('%b %d %H:%M:%S')} prover-7 cuzk-daemon[48121]: {text}"


def iso(t_ms: float, digits: int) -> str:
    dt = T0 + timedelta(milliseconds=t_ms)
    frac = f"{dt.microsecond:06d}" + "000"
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + frac[:digits] + "Z"


def noise(log: Log, rng: random.Random, t: float, p: int, job: str) -> None:
    r = rng.random()
    mod = rng.choice(MODULES)
    if r < 0.55:
        log.tracing(t, "INFO", mod, rng.choice((
            f"synthesizing partition {p} of {job}: {rng.randint(900, 1500)} constraints/ms",
            f"budget reserve ok bytes={ABC_BYTES} used_gib={rng.uniform(20, 90):.1f} free_gib={rng.uniform(10, 60):.1f}",
            f"request id={rng.randint(1, 10**6)} method=Prove status=accepted queue_depth={rng.randint(0, 4)}",
            f"pinned pool: {rng.randint(0, 8)} buffers free, {rng.randint(1, 8)} in use",
            f"proof {job} partition {p} witness ready ({rng.randint(100, 140)} M scalars)",
        )))
    elif r < 0.85:
        log.tracing(t, "DEBUG", mod, f"tick seq={rng.randint(1, 10**9)} elapsed_ms={rng.randint(0, 5000)} worker={p % 2}")
    elif r < 0.95:
        log.tracing(t, "WARN", "cuzk_core::engine", f"slow queue for {job}: depth {rng.randint(3, 9)} (backtrace follows)")
        for k in range(rng.randint(2, 4)):
            log.emit(t, f"   {k}: cuzk_core::engine::Engine::dispatch_partition::h{rng.getrandbits(48):012x}")
            log.emit(t, f"             at ./cuzk-core/src/engine.rs:{rng.randint(300, 1400)}:{rng.randint(5, 40)}")
    else:
        log.emit(t, f"[curio] lotus-provider seal: sector {rng.randint(1000, 9999)} state=PreCommit1 ok")


def simulate(args, log: Log, rng: random.Random, max_lines: int | None) -> None:
    workers = 2
    gpus = args.gpus
    mutex_free = 0.0
    worker_free = [0.0] * workers
    synth_slots = [0.0, 0.0]  # two synthesis pipelines
    heapq.heapify(synth_slots)
    first = True
    picks: list[float] = []
    for g in range(gpus):
        log.emit(0.0, f"CUZK_TIMING: d_a_cache allocated 512 MiB on gpu {g}")
        log.emit(0.1, f"CUZK_TIMING: set pool release threshold to MAX on gpu {g}")
    p = 0
    lines_per_partition = 20 + args.noise + 10
    while True:
        if max_lines is None and p >= args.partitions:
            break
        if max_lines is not None and len(log.items) >= max_lines + lines_per_partition * 4:
            break
        job_n, part = divmod(p, 10)
        job = f"porep-{job_n:04d}-{(job_n * 2654435761) % 2**32:08x}"
        # synthesis
        s0 = heapq.heappop(synth_slots)
        if p >= args.queue:  # bounded queue: the memory budget holds synthesis back
            s0 = max(s0, picks[p - args.queue])
        synth = max(800.0, rng.gauss(2400, 180))
        s1 = s0 + synth
        heapq.heappush(synth_slots, s1)
        log.emit(s0, f"TIMELINE,{s0:.0f},SYNTH_START,{job},partition={part}")
        log.emit(s1, f"TIMELINE,{s1:.0f},SYNTH_END,{job},partition={part},synth_ms={synth:.0f}")
        log.emit(s1 + 0.2, f"TIMELINE,{s1 + 0.2:.0f},GPU_QUEUE,{job},partition={part}")
        # a worker picks it up
        w = p % workers
        pick = max(s1 + 0.3, worker_free[w])
        picks.append(pick)
        log.tracing(pick, "INFO", "cuzk_core::engine",
                    f"GPU_TIMING hot_path pre-prove overhead worker_id={w} partition=Some({part}) "
                    f"status_ms=0 fail_check_ms=0 mark_busy_ms={rng.choice((0, 0, 0, 1))} total_overhead_ms={rng.choice((0, 1, 1, 2))}")
        log.emit(pick + 0.1, f"TIMELINE,{pick:.0f},GPU_PICKUP,{job},worker={w},partition={part}")
        split = rng.uniform(35, 70)
        setup = split + rng.uniform(2, 12)
        t_req = pick + setup
        log.emit(t_req, f"CUZK_TIMING: split_vectors_ms={split:.0f} setup_to_split_ms={setup:.0f}")
        # prep_msm on a CPU thread, started when the worker asks for the lock
        slow = rng.random() < args.slow_prep
        prep = rng.uniform(2600, 3600) if slow else rng.uniform(1700, 1909)
        prep_end = t_req + prep
        log.emit(prep_end, f"CUZK_TIMING: prep_msm_ms={prep:.0f}")
        take = max(t_req, mutex_free + 0.5)
        wait = take - t_req
        pre_lock = rng.uniform(0, 3)
        log.emit(take, f"CUZK_TIMING: pre_lock_cpu_ms={pre_lock:.0f} mutex_wait_ms={wait:.0f}")
        log.emit(take + 0.1, f"TIMELINE,{take:.0f},GPU_START,{job},worker={w},partition={part}")
        per_gpu = []
        for g in range(gpus):
            d_b = rng.uniform(650, 760) if first else rng.uniform(0.6, 3)
            if args.mode == "pinned":
                rate = max(20.0, rng.gauss(50.0, 2.0))
            else:
                rate = math.exp(rng.uniform(math.log(0.28), math.log(5.5)))
            upload = ABC_BYTES / (rate * 1e9) * 1e3 / gpus
            ntt = upload + rng.uniform(35, 48)
            coset = rng.gauss(113, 3)
            init, dtor = rng.uniform(3, 7), rng.uniform(1, 3)
            msm = rng.gauss(631, 2)
            total = d_b + ntt + coset + init + msm + dtor
            t_ntt = take + total
            barrier = max(0.0, prep_end - t_ntt)
            batch = rng.gauss(401, 2)
            tail = rng.gauss(197, 1.5)
            gpu_total = total + barrier + batch + tail
            per_gpu.append((g, d_b, ntt, coset, init, msm, dtor, total, barrier, batch, tail, gpu_total))
            log.emit(t_ntt, f"CUZK_NTT_H: d_b_alloc={d_b:.0f}ms ntt_kernels={ntt:.0f}ms coset_intt_sync={coset:.0f}ms "
                            f"msm_init={init:.0f}ms msm_invoke={msm:.0f}ms msm_dtor={dtor:.0f}ms total={total:.0f}ms")
        first = False
        # gpu_tid blocks interleave phase by phase
        for g, _, _, _, _, _, _, total, barrier, batch, tail, gpu_total in per_gpu:
            t = take + total
            log.emit(t + 0.01 * (g + 1), f"CUZK_TIMING: gpu_tid={g} ntt_msm_h_ms={total:.0f}")
            log.emit(t + barrier + 0.01 * (g + 1), f"CUZK_TIMING: gpu_tid={g} barrier_wait_ms={barrier:.0f}")
            log.emit(t + barrier + batch, f"CUZK_TIMING: gpu_tid={g} batch_add_ms={batch:.0f}")
            log.emit(take + gpu_total, f"CUZK_TIMING: gpu_tid={g} tail_msm_ms={tail:.0f} gpu_total_ms={gpu_total:.0f}")
        held = max(x[-1] for x in per_gpu) + rng.uniform(1, 6)
        release = take + held
        mutex_free = release
        log.emit(release, f"CUZK_TIMING: mutex_held_ms={held:.0f} total_start_fn_ms={setup + wait + held:.0f}")
        log.emit(release + 0.05, f"TIMELINE,{release:.0f},GPU_END,{job},worker={w},partition={part},gpu_ms={held:.0f}")
        bg2 = rng.uniform(380, 484)
        log.emit(release + bg2, f"CUZK_TIMING: b_g2_msm_ms={bg2:.0f} num_circuits=1")
        dealloc = rng.uniform(5, 40)
        log.emit(release + bg2 + dealloc, f"CUZK_TIMING: async_dealloc_ms={dealloc:.0f}")
        fin = rng.uniform(380, 440)
        t_fin = release + bg2 + fin
        log.tracing(t_fin, "INFO", "cuzk_core::engine",
                    f"FIN_TIMING finalizer partition worker_id={w} partition=Some({part}) finish_ms={fin:.0f} "
                    f"drop_res_ms={rng.randint(0, 2)} lock_wait_ms=0 process_ms={rng.randint(1, 3)} total_ms={fin + 3:.0f}")
        if rng.random() < 0.2:
            log.tracing(t_fin + 1, "INFO", "cuzk_core::memory",
                        f"FIN_TIMING malloc_trim (success path) job_id={job} partition={part} malloc_trim_ms={rng.randint(5, 20)}")
        worker_free[w] = t_fin + 2
        for _ in range(args.noise):
            noise(log, rng, rng.uniform(s0, t_fin), part, job)
        p += 1


def damage(log: Log, rng: random.Random, rate: float) -> int:
    n = 0
    for i, (t, seq, text, own) in enumerate(log.items):
        if "CUZK_" not in text or "=" not in text or rng.random() >= rate:
            continue
        kind = rng.randrange(3)
        if kind == 0:  # cut off inside its last key (a crash mid-write)
            text = text[:text.rfind("=") - 2]
        elif kind == 1:  # a value that is not a number
            k = text.find("=")
            text = text[:k + 1] + "abc" + text[text.find(" ", k) if text.find(" ", k) > 0 else len(text):]
        else:  # garbage after a key
            text = text + " \x7f#garbage"
        log.items[i] = (t, seq, text, own)
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=40, help="partitions to simulate (default 40)")
    ap.add_argument("--gpus", type=int, choices=(1, 2), default=1, help="GPUs per call (gpu_tid blocks)")
    ap.add_argument("--prefix", choices=("none", "iso", "journald", "docker"), default="iso")
    ap.add_argument("--mode", choices=("pageable", "pinned", "unpinned"), default="pageable",
                    help="host memory of the a/b/c upload (unpinned = pageable)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lines", type=int, default=None,
                    help="simulate until the log has this many lines (overrides --partitions)")
    ap.add_argument("--noise", type=int, default=14, help="noise events per partition (default 14)")
    ap.add_argument("--queue", type=int, default=3, help="partitions synthesized ahead of the GPU (default 3)")
    ap.add_argument("--slow-prep", type=float, default=0.1, help="share of partitions whose CPU prep is slow")
    ap.add_argument("--damage", type=float, default=0.0, help="share of CUZK lines to corrupt")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args(argv)
    if args.mode == "unpinned":
        args.mode = "pageable"
    if not 0.0 <= args.damage <= 1.0 or not 0.0 <= args.slow_prep <= 1.0:
        ap.error("--damage and --slow-prep are shares between 0 and 1")
    if args.partitions < 1 or args.queue < 1 or (args.lines is not None and args.lines < 1) or args.noise < 0:
        ap.error("--partitions and --lines must be positive, --noise >= 0")
    rng = random.Random(args.seed)
    log = Log(args.prefix, rng)
    simulate(args, log, rng, args.lines)
    damaged = damage(log, rng, args.damage) if args.damage else 0
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8", newline="\n")
    try:
        n = log.render(out, args.lines)
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"gen_daemon_log: {n} lines, {damaged} damaged -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
