"""Run a command under the NVML sampler and keep its output as a timestamped timing log.

`record(cmd, ...)` is the library behind `gpuscope record -- CMD`: it claims the run
directory, samples NVML while the child runs, passes the child's stdout/stderr through to
ours and into timing.log (each line prefixed with its arrival time on gpuscope's clock), and
writes meta.json at start and at the end.

Capture: the child's stdout is a pseudo-terminal (so C stdio and Python flush each line as
they print it; a pipe would make them buffer, and the lines would arrive, and be stamped, in
bursts), its stderr a pipe (unbuffered or line-buffered in C, C++, Python, Rust and Go, and
kept apart from stdout); one thread reads both, so timing.log has them in arrival order.
`use_pty=False`, or no pty to be had, gives plain pipes; meta.json `capture` says which. After
the run, a note when most lines arrived in bursts (their stamps are not their print times).

Signals: the child runs in its own process group. SIGINT/SIGTERM climb a ladder (forwarded,
then SIGTERM, then SIGKILL to the group); SIGHUP/SIGQUIT are forwarded and followed by SIGTERM
and SIGKILL on a timer, so the child is never orphaned and meta.json never left `running`.
The capture is gpuscope.record_capture, the signal ladder gpuscope.record_signals.Stopper.

Faults never stop the child: no NVML -> meta says "no samples: <reason>"; an unwritable run
directory or a full disk -> reported once through `on_error`, the command still runs.

Exit code: the child's; 128+N when a signal N ended it; 127 when the command was not found,
126 when it could not be executed (the shell's conventions).
"""

from __future__ import annotations

import math
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gpuscope import __version__
from gpuscope import nvml as nvml_mod
from gpuscope.clock import CLOCK
from gpuscope.errors import EXIT_RESOURCE, ResourceError, UsageError
from gpuscope.gpuinfo import first_line_rate, meta_gpus
from gpuscope.record_capture import (
    BURST_WARN_SHARE,
    StreamCapture,
    open_pty,
    read_chunk,
    stdin_for_child,
)
from gpuscope.record_signals import STOP_SIGNALS, Stopper, tie_to_parent
from gpuscope.rundir import RunDir, TimingLogWriter, host_info, iso_now
from gpuscope.sampler import (
    GPM_WINDOW_S,
    MIN_INTERVAL_S,
    PCIE_CHOICES,
    QUIET_INTERVAL_S,
    RowSink,
    Sampler,
    TeeSink,
)

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


POLL_S = 0.05  # the pump's longest sleep: signals' notes and timers are serviced this often
DRAIN_S = 1.0  # after the child exits, output of what it left running is read this long
STOP_GRACE_S = 5.0  # SIGHUP/SIGQUIT: SIGTERM this long after forwarding, SIGKILL as long again


def record(cmd: Sequence[str], *, out: str | os.PathLike[str] | None = None, interval_s: float = 0.020,
           gpus: Sequence[int] | None = None, pcie: str = "auto", use_pty: bool = True, steady: bool = False,
           on_error: Callable[[str], None] | None = None, on_note: Callable[[str], None] | None = None,
           stdout: IO[str] | None = None, stderr: IO[str] | None = None,
           argv: Sequence[str] | None = None, taps: Sequence[Any] = ()) -> RecordResult:
    """Run `cmd` while sampling; see the module docstring. Never raises for the child's sake.
    `on_note(msg)` (default `on_error`): what the run should know but is no error (bursts of
    output, signals handled, output left open); meta.json `notes` keeps them too. `taps`: more
    sinks of the sampler's rows beside samples.csv (the live view, the metrics exporter)."""
    interval_s = _check_options(cmd, out, interval_s, pcie)
    rec = _Recording(cmd, interval_s=interval_s, pcie=pcie, use_pty=use_pty, steady=steady, on_error=on_error,
                     on_note=on_note if on_note is not None else on_error,
                     stdout=stdout if stdout is not None else sys.stdout,
                     stderr=stderr if stderr is not None else sys.stderr)
    rec.taps = list(taps)
    rec.stopper.install()  # before meta.json says "running": from here a signal never kills us
    try:
        rec.open_nvml(gpus)
        rec.create_run_dir(out)
        rec.open_sampler(argv)
        child = rec.start_child()
        if isinstance(child, RecordResult):  # the command could not be run
            return child
        try:
            rc, stats = rec.pump(child)
        except BaseException as e:  # a bug of ours: still no orphan, and meta.json not left running
            rec.abandon(child, e)
            raise
        return rec.finish(rc, stats)
    finally:
        rec.stopper.restore()
        rec.say_signal_notes()


def _check_options(cmd: Sequence[str], out: str | os.PathLike[str] | None, interval_s: float,
                   pcie: str) -> float:
    """UsageError for a bad call, before anything is touched; the interval to sample at."""
    if not cmd:
        raise UsageError("no command given (usage: gpuscope record [OPTIONS] -- CMD ARGS...)")

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
        killed_by_stop = -rc in STOP_SIGNALS
        return 128 - rc, "interrupted" if killed_by_stop or interrupted else "failed"
    return rc, "interrupted" if interrupted else ("complete" if rc == 0 else "failed")


class _Recording:
    """One record() call, step by step: NVML and the GPUs, the run directory, the sampler and
    meta.json at the start, the child, the pumps until it exits, how it ended."""

    def __init__(self, cmd: Sequence[str], *, interval_s: float, pcie: str, use_pty: bool, steady: bool = False,
                 on_error: Callable[[str], None] | None, on_note: Callable[[str], None] | None,
                 stdout: IO[str], stderr: IO[str]) -> None:
        self.cmd = cmd
        self.interval_s = interval_s
        self.steady = steady  # every tick at the interval, also while PCIe is quiet
        self.pcie = pcie
        self.on_error, self.on_note = on_error, on_note
        self.stdout, self.stderr = stdout, stderr
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.stopper = Stopper(STOP_GRACE_S)
        self.use_pty = use_pty
        self.pty: tuple[int, int] | str = "--no-pty"  # (master, slave), or why not: start_child
        self.outputs: list[StreamCapture] = []
        self.nv: nvml_mod.Nvml | None = None
        self.chosen: list[int] = []
        self.system: dict[str, Any] = {}
        self.no_samples: str | None = None
        self.rd: RunDir | None = None
        self.sampler: Sampler | None = None
        self.log: TimingLogWriter | None = None
        self.taps: list[Any] = []

    def report(self, msg: str) -> None:
        self.errors.append(msg)
        _tell(self.on_error, msg)

    def note(self, msg: str) -> None:
        self.notes.append(msg)
        _tell(self.on_note, msg)

    def say_signal_notes(self) -> None:
        """What the signal handlers did (they queue it: saying it from a handler could re-enter
        a stream); signals are not errors, and meta.json `signals_*` keeps them."""
        for msg in self.stopper.pop_messages():
            _tell(self.on_note, msg)

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

        nv, rd = self.nv, self.rd
        gpu_meta: list[dict[str, Any]] = []
        if nv is not None and self.chosen:
            gpu_meta = meta_gpus(nv, self.chosen)
            if rd is not None:
                sink: RowSink = rd.samples_writer()
                if self.taps:
                    sink = TeeSink(sink, self.taps, on_error=self.report)
                self.sampler = Sampler(nv, self.chosen, sink, interval_s=self.interval_s,
                                       pcie=self.pcie, on_error=self.report,
                                       quiet_interval_s=None if self.steady else QUIET_INTERVAL_S)
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
        """The child in its own process group, stdout on the pty (or a pipe), stderr on a pipe,
        stdin ours unless that is a terminal (stdin_for_child); or the failed RecordResult
        (127: not found, 126: not executable) when it cannot be started."""
        stdin = stdin_for_child()
        if self.use_pty:
            self.pty = open_pty()
            if isinstance(self.pty, str):
                self.note(f"{self.pty}: the command's stdout is captured through a pipe, so the output "
                          "of a program that buffers it when not on a terminal arrives in bursts")
        if self.rd is not None:
            self.rd.write_meta(capture="pty" if isinstance(self.pty, tuple) else "pipes",
                               stdin="/dev/null" if stdin == subprocess.DEVNULL else "inherited",
                               notes=self.notes)
        slave = self.pty[1] if isinstance(self.pty, tuple) else subprocess.PIPE
        try:
            child = subprocess.Popen(list(self.cmd), stdin=stdin, stdout=slave, stderr=subprocess.PIPE,
                                     process_group=0, preexec_fn=tie_to_parent())
        except (FileNotFoundError, PermissionError, OSError) as e:
            self._close_pty()
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
        self.stopper.attach(child)
        if isinstance(self.pty, tuple):
            master, slave_fd = self.pty
            os.close(slave_fd)  # the child holds it now: when it (and what it started) is done, EOF
            self.stopper.follow_winsize(master)
            out_fd = master
        else:
            assert child.stdout is not None  # (stdout=PIPE)
            out_fd = os.dup(child.stdout.fileno())
            child.stdout.close()
        assert child.stderr is not None  # (stderr=PIPE)
        err_fd = os.dup(child.stderr.fileno())
        child.stderr.close()
        self.outputs = [StreamCapture("stdout", out_fd, self.stdout, self.log),
                        StreamCapture("stderr", err_fd, self.stderr, self.log)]
        return child

    def _close_pty(self) -> None:
        if isinstance(self.pty, tuple):
            for fd in self.pty:
                os.close(fd)

    def pump(self, child: subprocess.Popen[bytes]) -> tuple[int, SamplerStats | None]:
        """Sample and copy the child's output until it exits and its output ends (or DRAIN_S
        after its exit): (return code, sampler stats). One thread reads both streams, so
        timing.log holds them in the order they arrived. The sampler and the files are closed
        either way."""
        sampler, log = self.sampler, self.log
        if sampler is not None:
            sampler.start()
        try:
            rc = self._read_until_done(child)
        finally:
            for o in self.outputs:
                if o.ended_at is None:
                    o.close(CLOCK.mono())
            stats = sampler.stop() if sampler is not None else None
            if log is not None:
                log.close()
            if sampler is not None:
                sampler.sink.close()
        return rc, stats

    def _read_until_done(self, child: subprocess.Popen[bytes]) -> int:
        sel = selectors.DefaultSelector()
        for o in self.outputs:
            sel.register(o.fd, selectors.EVENT_READ, o)
        rc: int | None = None
        exited_at = 0.0
        try:
            while True:
                if sel.get_map():
                    for key, _ in sel.select(POLL_S):
                        data, o = read_chunk(key.fd), key.data
                        if data:
                            o.feed(data, CLOCK.mono())
                        else:
                            sel.unregister(key.fd)
                            o.close(CLOCK.mono())
                elif rc is None:
                    try:
                        child.wait(POLL_S)
                    except subprocess.TimeoutExpired:
                        pass
                if rc is None and (rc := child.poll()) is not None:
                    exited_at = CLOCK.mono()
                self.stopper.service(running=rc is None or self.stopper.group_alive())
                self.say_signal_notes()
                if rc is not None and (not sel.get_map() or CLOCK.mono() - exited_at >= DRAIN_S):
                    if not self.stopper.after_exit():  # (a stop signal's ladder finished on the group)
                        break
                    if not sel.get_map():
                        time.sleep(POLL_S)
            open_ = [o.name for o in self.outputs if o.ended_at is None]
            if open_:
                self.note(f"the command exited but its {' and '.join(open_)} stayed open for more than "
                          f"{DRAIN_S:g} s: a process it started still holds {'them' if len(open_) > 1 else 'it'}, "
                          "and what that process prints from now on is not recorded")
        finally:
            sel.close()
        return rc

    def abandon(self, child: subprocess.Popen[bytes], err: BaseException) -> None:
        """The pump failed: end the command's process group and mark the run failed."""
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            child.wait()
        if self.rd is not None:
            self.rd.write_meta(status="failed", exit_code=1, child_returncode=child.returncode,
                               ended=iso_now(), error=f"{type(err).__name__}: {err}", notes=self.notes)

    def _burst_note(self) -> None:
        """Warn when most lines arrived in bursts: their stamps are not when they were printed."""
        total = sum(len(o.stamps) for o in self.outputs)
        bursts = sum(o.burst_lines() for o in self.outputs)
        if not total or bursts < BURST_WARN_SHARE * total:
            return
        flush = "make it flush each line (stdbuf -oL, python -u, fflush)"
        if not self.use_pty:
            fix = f"{flush} or record without --no-pty"
        elif isinstance(self.pty, str):
            fix = flush
        else:
            fix = f"it buffers its output even on a terminal (or pipes it through another program): {flush}"
        self.note(f"{bursts} of {total} lines arrived in bursts: the program's output was buffered, so "
                  f"their times are when they arrived, not when they were printed; {fix}")

    def finish(self, rc: int, stats: SamplerStats | None) -> RecordResult:
        """How it ended: the RecordResult and meta.json's last write."""
        self._burst_note()
        lines = sum(len(o.stamps) for o in self.outputs)
        burst_lines = sum(o.burst_lines() for o in self.outputs)
        exit_code, status = _ending(rc, self.stopper.sent)
        if status == "complete" and any(e.startswith("cannot write ") for e in self.errors):
            # a run file stopped being written (a full disk): what the directory holds is cut
            status = "incomplete"
            exit_code = exit_code or EXIT_RESOURCE
        rd, no_samples = self.rd, self.no_samples
        res = RecordResult(exit_code, status, rd.path if rd else None, timing_lines=lines,
                           sample_rows=stats.rows if stats else 0, no_samples=no_samples,
                           sampler=stats.to_dict() if stats else None, errors=self.errors)
        if rd is not None:
            done = rd.write_meta(status=status, exit_code=exit_code, child_returncode=rc, ended=iso_now(),
                                 signals_received=[signal.Signals(s).name for s in self.stopper.received],
                                 signals_forwarded=[signal.Signals(s).name for s in self.stopper.sent],
                                 sampler=res.sampler if res.sampler is not None else no_samples,
                                 output_lines=lines, output_burst_lines=burst_lines,
                                 notes=self.notes, errors=self.errors)
            if not done:  # a full disk: meta.json still says running; never report 'complete'
                res.status = "unfinished (meta.json could not be written: it still says 'running')"
                if res.exit_code == 0:
                    res.exit_code = EXIT_RESOURCE
        return res


def _tell(hook: Callable[[str], None] | None, msg: str) -> None:
    """Say `msg` through `hook`; a dead terminal (SIGHUP) or a closed stream never stops the recording."""
    if hook is None:
        return
    try:
        hook(msg)
    except (OSError, ValueError):
        pass
