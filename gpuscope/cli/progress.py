"""Progress on stderr while a big input is read and analyzed.

Nothing is shown for the first second (nor at all for an input under MIN_BYTES: small logs
take well under a second). Then, on a terminal, one line overwritten in place (`gpuscope:
reading x.log: 45% (90 of 197 MB), 1.2 s`), erased when the work is done; otherwise (a pipe,
a file, CI) a line every PERIOD seconds. A helper thread shows the line while the work
itself (the C scanner, numpy) has no time to, so a long step without callbacks still shows.

    with Progress(path) as p:
        src = open_source(path, progress=p.reading)   # (bytes read, bytes in all)
        p.step("analyzing")
        ...
"""

from __future__ import annotations

import os
import sys
import threading
import time

DELAY_S = 1.0
PERIOD_S = 2.0        # lines when stderr is not a terminal
TICK_S = 0.2          # how often the terminal line is redrawn
MIN_BYTES = 4 << 20   # inputs smaller than this show no progress
ENV = "GPUSCOPE_PROGRESS"  # 0: never; 1: whatever the size (tests)


def _size(source) -> int:
    try:
        if source == "-":
            return 0
        st = os.stat(source)
        if os.path.isdir(source):  # a run directory: its timing log and its samples
            return sum(os.stat(p).st_size for p in (os.path.join(source, n) for n in ("timing.log", "samples.csv"))
                       if os.path.isfile(p))
        return st.st_size
    except (OSError, ValueError, TypeError):
        return 0


class Progress:
    def __init__(self, source, stream=None, *, min_bytes: int | None = None):
        self.name = os.path.basename(str(source).rstrip("/")) or str(source)
        self.stream = stream if stream is not None else sys.stderr
        env = os.environ.get(ENV, "")
        limit = MIN_BYTES if min_bytes is None else min_bytes
        self.enabled = env != "0" and (env == "1" or _size(source) >= limit)
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            self.tty = False
        self.state = f"reading {self.name}"
        self.t0 = time.monotonic()
        self._shown = False
        self._last_line = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # -- what the work reports -------------------------------------------------------------

    def reading(self, done: int, total: int) -> None:
        if total > 0:
            self.state = (f"reading {self.name}: {100 * done / total:.0f}% "
                          f"({done / 1e6:,.0f} of {total / 1e6:,.0f} MB)")

    def step(self, what: str) -> None:
        self.state = f"{what} {self.name}"

    # -- showing it ----------------------------------------------------------------------

    def __enter__(self) -> Progress:
        self.t0 = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="gpuscope-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown and self.tty:
            self._write("\r\x1b[K")

    def _run(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while True:
            self.show()
            if self._stop.wait(TICK_S if self.tty else PERIOD_S):
                return

    def show(self) -> None:
        elapsed = time.monotonic() - self.t0
        text = f"gpuscope: {self.state}, {elapsed:.1f} s"
        if self.tty:
            width = _width(self.stream)
            self._write("\r" + text[: width - 1] + "\x1b[K")
        else:
            self._write(text + "\n")
        self._shown = True

    def _write(self, s: str) -> None:
        with self._lock:
            try:
                self.stream.write(s)
                self.stream.flush()
            except (OSError, ValueError):
                self._stop.set()  # a dead terminal: stop telling


def _width(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80
