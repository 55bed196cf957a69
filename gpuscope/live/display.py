"""Showing a LiveState while it fills: a Rich Live panel on a terminal, plain lines elsewhere.

`LiveDisplay` is a context manager. On a terminal it runs Rich's Live (its own refresh thread,
`refresh_s` apart) with our stdout and stderr redirected above the panel, so a recorded
command's output and gpuscope's notes scroll above it; `out` is the stream to hand the
recorder. Off a terminal a thread prints one plain line per GPU every `refresh_s` to `plain_to`
(stdout for watch; stderr for record, whose stdout is the command's). `renders` counts the
refreshes (the refresh rate `watch` reports at the end).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any, cast

from gpuscope.live.finding import RunningFinding
from gpuscope.live.state import LiveState
from gpuscope.live.view import panel, plain_line

REFRESH_S = 0.5


class _NoCR:
    """A text stream that drops the carriage return of a pty's CRLF before it reaches Rich's
    stdout proxy (which prints whole lines above the panel)."""

    def __init__(self, dst: IO[str]) -> None:
        self.dst = dst

    def write(self, text: str) -> int:
        self.dst.write(text.replace("\r\n", "\n"))
        return len(text)

    def flush(self) -> None:
        self.dst.flush()

    def isatty(self) -> bool:
        return False


class LiveDisplay:
    def __init__(self, state: LiveState, title: str, *, refresh_s: float = REFRESH_S,
                 plain: bool | None = None, plain_to: IO[str] | None = None,
                 finding: RunningFinding | None = None) -> None:
        self.state, self.title, self.refresh_s = state, title, max(0.05, float(refresh_s))
        self.finding = finding if finding is not None else RunningFinding(state)
        self.plain = (not sys.stdout.isatty()) if plain is None else plain
        self.plain_to = plain_to
        self.renders = 0
        self.started = 0.0
        self.ended = 0.0
        self._live: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.out: IO[str] = sys.stdout

    def _renderable(self) -> Any:
        self.renders += 1
        return panel(self.state.snapshot(), self.finding.current(), self.title)

    def lines(self) -> list[str]:
        self.renders += 1
        finding = self.finding.current()
        return [plain_line(v, finding) for v in self.state.snapshot()]

    def _plain_loop(self) -> None:
        dst = self.plain_to if self.plain_to is not None else sys.stdout
        while not self._stop.wait(self.refresh_s):
            try:
                for ln in self.lines():
                    dst.write(ln + "\n")
                dst.flush()
            except (OSError, ValueError):  # | head closed it: stop showing, keep sampling
                return

    def __enter__(self) -> LiveDisplay:
        self.started = time.monotonic()
        self.finding.start()
        if self.plain:
            self._thread = threading.Thread(target=self._plain_loop, name="gpuscope-live", daemon=True)
            self._thread.start()
            return self
        from rich.console import Console
        from rich.live import Live

        console = Console(highlight=False, emoji=False)
        self._live = Live(get_renderable=self._renderable, console=console,
                          refresh_per_second=1.0 / self.refresh_s, redirect_stdout=True, redirect_stderr=True,
                          transient=False)
        self._live.start()
        self.out = cast("IO[str]", _NoCR(sys.stdout))  # (written and flushed only: all the recorder does)
        return self

    def __exit__(self, *exc: object) -> None:
        self.ended = time.monotonic()
        if self._live is not None:
            try:
                self._live.stop()  # a last render: the final panel stays on the terminal
            except (OSError, ValueError):
                pass
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.finding.stop()
        self.out = sys.stdout

    @property
    def refresh_hz(self) -> float:
        dur = (self.ended or time.monotonic()) - self.started
        return self.renders / dur if dur > 0 else 0.0
