"""The running first finding: analyze's samples-first analysis of the live window, every few seconds.

The same `gpuscope.analysis.analyze` that `gpuscope analyze` runs over a recording, over the
rows the view holds (the last window of every GPU), so the sentence the panel shows is the one
the recording's analysis would rank first for that stretch. It runs at most every `every_s`
(it costs ~10 ms, its first call the imports of the analysis: ~0.5 s), on its own thread once
`start()`ed, so a refresh never waits for it; `current()` is the latest sentence.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

from gpuscope.analysis import analyze
from gpuscope.clock import CLOCK, Clock
from gpuscope.errors import GpuscopeError
from gpuscope.live.state import LiveState
from gpuscope.rolemodel import load_model
from gpuscope.sources.source import Source

EVERY_S = 5.0
MIN_ROWS = 10


class RunningFinding:
    def __init__(self, state: LiveState, *, every_s: float = EVERY_S, clock: Clock = CLOCK) -> None:
        self.state, self.every_s, self.clock = state, every_s, clock
        self.text: str | None = None
        self._next = -math.inf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> str | None:
        if self._thread is not None:
            return self.text
        now = self.clock.mono()
        if now >= self._next:
            self._next = now + self.every_s
            self.text = self._compute()
        return self.text

    def start(self) -> RunningFinding:
        self._thread = threading.Thread(target=self._loop, name="gpuscope-finding", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        while not self._stop.wait(1.0 if self.text is None else self.every_s):
            try:
                self.text = self._compute()
            except Exception as e:  # a bug in a rule must not stop the view
                self.text = f"(no finding: {type(e).__name__}: {e})"

    def _compute(self) -> str | None:
        df = self.state.frame()
        if len(df) < MIN_ROWS:
            return self.text
        src = Source(path=Path("<live>"), kind="samples", model=load_model(None), samples=df,
                     no_log_reason="live samples: no timing lines",
                     line_rate_gbs=self.state.line_rate_gbs, line_rate_source=self.state.line_rate_source)
        try:
            result = analyze(src)
        except GpuscopeError:
            return self.text
        if not result.findings:
            return "nothing to report over the last window"
        d = result.findings[0]
        return f"[{d.severity.upper()}] {d.id}: {d.summary}"
