"""`record --live` / `record --metrics`: the recorder with a LiveState tapped onto its sampler,
shown (gpuscope.live.display) and served (gpuscope.exporter) while the command runs.

The recording is record()'s own: the same run directory, signal ladder (Ctrl-C is forwarded to
the command, which ends, and the run directory is finished as usual) and exit code; the tap
only reads the rows the sampler writes to samples.csv.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpuscope.cli._common import say
from gpuscope.errors import UsageError
from gpuscope.exporter import MetricsServer, parse_listen
from gpuscope.live.display import LiveDisplay
from gpuscope.live.session import live_state
from gpuscope.recorder import record

if TYPE_CHECKING:
    from gpuscope.recorder import RecordResult


def record_live(cmd: Sequence[str], *, live: bool, metrics: str | None, **kw: Any) -> RecordResult:
    if not cmd:
        raise UsageError("no command given (usage: gpuscope record [OPTIONS] -- CMD ARGS...)")
    if metrics:
        parse_listen(metrics)  # a bad address is refused before the command starts
    state, _, _ = live_state(kw.get("gpus"), need_nvml=False)
    server = MetricsServer(state, metrics).start() if metrics else None
    if server is not None:
        say(f"serving metrics on {server.url}")
    try:
        if not live:
            return record(cmd, on_error=say, argv=sys.argv, taps=[state], **kw)
        title = f"gpuscope record: {' '.join(cmd)}"[:120]
        display = LiveDisplay(state, title, plain_to=sys.stderr)
        cpu0 = time.process_time()  # gpuscope's own threads (sampler, view, endpoint), not the command's
        with display:
            out = display.out
            res = record(cmd, on_error=say, argv=sys.argv, taps=[state], stdout=out, **kw)
        cpu = time.process_time() - cpu0
        wall = max(display.ended - display.started, 1e-9)
        say(f"live view: {display.renders} refreshes ({display.refresh_hz:.2f} Hz); gpuscope CPU {cpu:.2f} s "
            f"({100 * cpu / wall:.1f}% of a core, the sampler included)")
        return res
    finally:
        if server is not None:
            server.stop()
