"""Run a command under the NVML sampler and keep its output as a timestamped timing log.

`record(cmd, ...)` is the library behind `gpuscope record -- CMD`: it creates the run
directory, samples NVML while the child runs, passes the child's stdout/stderr through to
ours and into timing.log (each line prefixed with its arrival time on gpuscope's clock),
forwards SIGINT/SIGTERM to the child, and writes meta.json at start and at the end.

Faults never stop the child: no NVML -> meta says "no samples: <reason>"; an unwritable run
directory or a full disk -> reported once through `on_error`, the command still runs.

Exit code: the child's; 128+N when a signal N ended it; 127 when the command was not found,
126 when it could not be executed (the shell's conventions).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from gpuscope import __version__
from gpuscope import nvml as nvml_mod
from gpuscope.clock import CLOCK
from gpuscope.errors import ResourceError, UsageError
from gpuscope.gpuinfo import first_line_rate, meta_gpus
from gpuscope.rundir import RunDir, TimingLogWriter, host_info, iso_now

if TYPE_CHECKING:
    from gpuscope.sampler import Sampler, SamplerStats


def parse_gpus(text: str | None) -> list[int] | None:
    """'0,1' -> [0, 1]; None/'' -> None (all GPUs); anything else -> UsageError."""
    if text is None or not text.strip():
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise UsageError(f"--gpus: bad GPU index {part!r} (expected e.g. 0,1)")
        if int(part) not in out:
            out.append(int(part))
    return out


@dataclass
class RecordResult:
    exit_code: int
    status: str  # complete | failed | interrupted
    path: Path | None
    timing_lines: int = 0
    sample_rows: int = 0
    no_samples: str | None = None
    sampler: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)


def _pump(src: IO[bytes], dst: IO[str] | None, log: TimingLogWriter | None, counter: list[int],
          order: threading.Lock) -> None:
    """Copy lines from the child's pipe to our stream and the timing log, stamped on arrival.

    The stamp is taken under `order` (shared by the stdout and stderr pumps), so timing.log
    stays sorted by time even though the two pipes are read by two threads.
    """
    for raw in iter(src.readline, b""):
        text = raw.decode("utf-8", errors="replace")
        if log is not None:
            with order:
                log.write_line(text, CLOCK.mono())
        if dst is not None:
            try:
                dst.write(text)
                dst.flush()
            except (OSError, ValueError):  # our stdout closed (| head): keep logging
                dst = None
        counter[0] += 1
    src.close()


def record(cmd: Sequence[str], *, out: str | os.PathLike[str] | None = None, interval_s: float = 0.020,
           gpus: Sequence[int] | None = None, pcie: str = "auto",
           on_error: Callable[[str], None] | None = None,
           stdout: IO[str] | None = None, stderr: IO[str] | None = None,
           argv: Sequence[str] | None = None) -> RecordResult:
    """Run `cmd` while sampling; see the module docstring. Never raises for the child's sake."""
    interval_s = _check_options(cmd, out, interval_s, pcie)
    rec = _Recording(cmd, interval_s=interval_s, pcie=pcie, on_error=on_error,
                     stdout=stdout if stdout is not None else sys.stdout,
                     stderr=stderr if stderr is not None else sys.stderr)
    rec.open_nvml(gpus)
    rec.create_run_dir(out)
    rec.open_sampler(argv)
    child = rec.start_child()
    if isinstance(child, RecordResult):  # the command could not be run
        return child
    rc, stats, lines = rec.pump(child)
    return rec.finish(rc, stats, lines)


def _check_options(cmd: Sequence[str], out: str | os.PathLike[str] | None, interval_s: float,
                   pcie: str) -> float:
    """UsageError for a bad call, before anything is touched; the interval to sample at."""
    if not cmd:
        raise UsageError("no command given (usage: gpuscope record [OPTIONS] -- CMD ARGS...)")
    from gpuscope.sampler import GPM_WINDOW_S, MIN_INTERVAL_S, PCIE_CHOICES

    if not math.isfinite(interval_s) or interval_s < MIN_INTERVAL_S:  # nan < 5 is False
        raise UsageError(f"--interval must be at least {MIN_INTERVAL_S * 1e3:g} ms and finite, "
                         f"got {interval_s * 1e3:g}")
    if pcie not in PCIE_CHOICES:
        raise UsageError(f"--pcie must be one of {', '.join(PCIE_CHOICES)}")
    if pcie == "gpm":
        interval_s = max(interval_s, GPM_WINDOW_S)  # nothing new to read between GPM windows
    if out is not None and not str(out).strip():
        raise UsageError("--out: an empty path names the current directory: give a directory for the run")
    return interval_s


def _ending(rc: int, interrupted: list[int]) -> tuple[int, str]:
    """(exit code, status) of a child that returned `rc` (negative: killed by signal -rc)."""
    if rc < 0:
        killed_by_stop = -rc in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        return 128 - rc, "interrupted" if killed_by_stop or interrupted else "failed"
    return rc, "interrupted" if interrupted else ("complete" if rc == 0 else "failed")


class _Recording:
    """One record() call, step by step: NVML and the GPUs, the run directory, the sampler and
    meta.json at the start, the child, the pumps until it exits, how it ended."""

    def __init__(self, cmd: Sequence[str], *, interval_s: float, pcie: str,
                 on_error: Callable[[str], None] | None, stdout: IO[str], stderr: IO[str]) -> None:
        self.cmd = cmd
        self.interval_s = interval_s
        self.pcie = pcie
        self.on_error = on_error
        self.stdout, self.stderr = stdout, stderr
        self.errors: list[str] = []
        self.nv: nvml_mod.Nvml | None = None
        self.chosen: list[int] = []
        self.system: dict[str, Any] = {}
        self.no_samples: str | None = None
        self.rd: RunDir | None = None
        self.sampler: Sampler | None = None
        self.log: TimingLogWriter | None = None
        self.interrupted: list[int] = []  # signals forwarded to the child

    def report(self, msg: str) -> None:
        self.errors.append(msg)
        if self.on_error is not None:
            self.on_error(msg)

    def open_nvml(self, gpus: Sequence[int] | None) -> None:
        """NVML (absence is not an error) and the GPUs to sample, checked before anything is written."""
        nv = nvml_mod.get()
        if nv is None:
            self.no_samples = f"no samples: {nvml_mod.unavailable_reason()}"
            return
        try:
            self.system = nv.system()
            n = nv.device_count()
        except nvml_mod.GpuLost as e:
            nv, n = None, 0
            self.no_samples = f"no samples: NVML stopped answering ({e})"
        chosen = list(range(n)) if gpus is None else list(gpus)
        bad = [g for g in chosen if not 0 <= g < n]
        if bad and nv is not None:
            raise UsageError(f"--gpus: no GPU {bad[0]} (this machine has {n}: 0..{n - 1})" if n
                             else "--gpus: this machine has no GPU")
        if nv is None:
            chosen = []
        elif not chosen:
            self.no_samples = "no samples: no GPU found by NVML"
        self.nv, self.chosen = nv, chosen

    def create_run_dir(self, out: str | os.PathLike[str] | None) -> None:
        """The run directory, claimed (UsageError, exit 2, when --out is in use: RunDir.create);
        when it cannot be made or written, report once and run the command anyway."""
        try:
            self.rd = RunDir.create(out, mode="record", on_error=self.report)
        except ResourceError as e:
            self.report(f"{e.one_line()}; running the command without recording")

    def open_sampler(self, argv: Sequence[str] | None) -> None:
        """The sampler (not started yet), meta.json at the start (status running), timing.log."""
        from gpuscope.sampler import Sampler

        nv, rd = self.nv, self.rd
        gpu_meta: list[dict[str, Any]] = []
        if nv is not None and self.chosen:
            gpu_meta = meta_gpus(nv, self.chosen)
            if rd is not None:
                self.sampler = Sampler(nv, self.chosen, rd.samples_writer(), interval_s=self.interval_s,
                                       pcie=self.pcie, on_error=self.report)
            else:
                self.no_samples = "no samples: run directory not writable"
        if rd is not None:
            rd.write_meta(**self._start_meta(gpu_meta, argv))
            if self.no_samples is not None:
                rd.samples_writer().close()  # the header: a readable, empty samples.csv
        self.log = rd.timing_log() if rd is not None else None

    def _start_meta(self, gpu_meta: list[dict[str, Any]], argv: Sequence[str] | None) -> dict[str, Any]:
        return {
            "gpuscope_version": __version__, "mode": "record",
            "argv": list(argv) if argv is not None else list(sys.argv),
            "command": list(self.cmd), "cwd": os.getcwd(), "host": host_info(),
            "driver": self.system or None, "gpus": gpu_meta,
            "line_rate_gbs": first_line_rate(gpu_meta),
            "started": iso_now(), "status": "running",
            "sampler": {"interval_ms": self.interval_s * 1e3} if self.sampler is not None else self.no_samples,
        }

    def start_child(self) -> subprocess.Popen[bytes] | RecordResult:
        """The child with piped output in its own process group, or the failed RecordResult
        (127: not found, 126: not executable) when it cannot be started."""
        try:
            return subprocess.Popen(list(self.cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    process_group=0)
        except (FileNotFoundError, PermissionError, OSError) as e:
            code = 127 if isinstance(e, FileNotFoundError) else 126
            msg = f"cannot run {self.cmd[0]!r}: {e.strerror or e}"
            self.report(msg)
            if self.log is not None:
                self.log.close()
            rd = self.rd
            if rd is not None:
                rd.write_meta(status="failed", exit_code=code, ended=iso_now(), error=msg)
            return RecordResult(code, "failed", rd.path if rd else None, no_samples=self.no_samples,
                                errors=self.errors)

    def _forward_signals(self, child: subprocess.Popen[bytes]) -> dict[int, Any]:
        """SIGINT/SIGTERM go to the child (main thread only); returns the handlers to restore."""

        def forward(signum: int, _frame: FrameType | None) -> None:
            self.interrupted.append(signum)
            try:
                child.send_signal(signum)
            except ProcessLookupError:
                pass

        old: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                old[s] = signal.signal(s, forward)
        return old

    def pump(self, child: subprocess.Popen[bytes]) -> tuple[int, SamplerStats | None, int]:
        """Sample and copy the child's output until it exits: (return code, sampler stats,
        output lines). Signal handlers, the sampler and the files are closed either way."""
        old = self._forward_signals(child)
        sampler, log = self.sampler, self.log
        if sampler is not None:
            sampler.start()
        counts = [[0], [0]]
        order = threading.Lock()
        pumps = [threading.Thread(target=_pump, args=(child.stdout, self.stdout, log, counts[0], order), daemon=True),
                 threading.Thread(target=_pump, args=(child.stderr, self.stderr, log, counts[1], order), daemon=True)]
        for t in pumps:
            t.start()
        try:
            rc = child.wait()
            for t in pumps:
                t.join(timeout=5.0)  # a grandchild may keep the pipe open: do not hang on it
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            stats = sampler.stop() if sampler is not None else None
            if log is not None:
                log.close()
            if sampler is not None:
                sampler.sink.close()
        return rc, stats, counts[0][0] + counts[1][0]

    def finish(self, rc: int, stats: SamplerStats | None, lines: int) -> RecordResult:
        """How it ended: the RecordResult and meta.json's last write."""
        exit_code, status = _ending(rc, self.interrupted)
        rd, no_samples = self.rd, self.no_samples
        res = RecordResult(exit_code, status, rd.path if rd else None, timing_lines=lines,
                           sample_rows=stats.rows if stats else 0, no_samples=no_samples,
                           sampler=stats.to_dict() if stats else None, errors=self.errors)
        if rd is not None:
            rd.write_meta(status=status, exit_code=exit_code, child_returncode=rc, ended=iso_now(),
                          signals_forwarded=[signal.Signals(s).name for s in self.interrupted],
                          sampler=res.sampler if res.sampler is not None else no_samples,
                          output_lines=lines, errors=self.errors)
        return res
