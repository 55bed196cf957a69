"""What `gpuscope record` does with the signals it gets while its command runs: `Stopper`,
the ladder (forwarded, then SIGTERM, then SIGKILL to the command's process group), climbed on a
timer after SIGHUP/SIGQUIT, and SIGWINCH passed on to the command's pseudo-terminal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from gpuscope.clock import CLOCK
from gpuscope.record_capture import copy_winsize, terminal_fd

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_TIMED = (signal.SIGHUP, signal.SIGQUIT)  # nobody is left to press Ctrl-C: escalate on a timer


class Stopper:
    """What gpuscope does with the signals it gets while the command runs.

    Every stop signal climbs one rung, as container runtimes do: the first is forwarded to the
    command's process group as it came, the second sends SIGTERM, the third and later SIGKILL.
    After a SIGHUP or SIGQUIT (the terminal is gone, or someone wants gpuscope gone) the
    command gets STOP_GRACE_S to end before the next rung is climbed for it, so gpuscope never
    leaves it running and always finishes meta.json. SIGWINCH passes our window size on.

    The handlers only send signals and queue what to say: the pump says it (a handler writing
    to a stream the main thread is writing could re-enter it).
    """

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.child: subprocess.Popen[bytes] | None = None
        self.received: list[int] = []
        self.sent: list[int] = []
        self.messages: list[str] = []
        self.deadline: float | None = None  # when the timed rung is due
        self.timed = False  # a SIGHUP or SIGQUIT came: the ladder climbs on its own
        self.old: dict[int, Any] = {}
        self.pty_master: int | None = None
        self._early: list[int] = []  # received before the child existed

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for s in STOP_SIGNALS:
            self.old[s] = signal.signal(s, self._on_stop)

    def follow_winsize(self, master: int) -> None:
        """On a terminal: our window size to the child's pty whenever it changes."""
        if self.old and terminal_fd() is not None:
            self.pty_master = master
            self.old[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, self._on_winch)

    def restore(self) -> None:
        for s, h in self.old.items():
            signal.signal(s, h)
        self.old = {}

    def attach(self, child: subprocess.Popen[bytes]) -> None:
        """The child runs: signals received before it did are acted on now."""
        self.child = child
        early, self._early = self._early, []
        for s in early:
            self._climb(s)

    def _on_stop(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.child is None:
            self._early.append(signum)
        else:
            self._climb(signum)

    def _on_winch(self, _signum: int, _frame: FrameType | None) -> None:
        if self.pty_master is not None and copy_winsize(terminal_fd(), self.pty_master):
            self._send(signal.SIGWINCH, record=False)

    def _climb(self, signum: int, timer: bool = False) -> None:
        """One rung up: the signal itself, then SIGTERM, then SIGKILL (see the class)."""
        rung, g = len(self.sent) + 1, f"{self.grace_s:g}"
        name = signal.Signals(signum).name
        self.timed = self.timed or signum in _TIMED
        if timer:
            cause = f"the command is still running {g} s after {signal.Signals(self.sent[-1]).name}"
        else:
            cause = {1: name, 2: f"{name} again", 3: f"{name} a third time"}.get(rung, f"{name} again")
        group = f"the command's process group ({self.child.pid if self.child else '?'})"
        if rung == 1:
            self._send(signum)
            then = (f"SIGTERM in {g} s and SIGKILL {g} s later if it is still running" if self.timed
                    else f"{name} again sends SIGTERM, a third time SIGKILL")
            self.messages.append(f"{cause}: forwarded to {group}; {then}")
        elif rung == 2:
            self._send(signal.SIGTERM)
            then = f"SIGKILL in {g} s if it is still running" if self.timed else f"{name} once more sends SIGKILL"
            self.messages.append(f"{cause}: sent SIGTERM to {group}; {then}")
        else:
            self._send(signal.SIGKILL)
            self.messages.append(f"{cause}: sent SIGKILL to {group}")
        self.deadline = CLOCK.mono() + self.grace_s if self.timed and rung < 3 else None

    def _send(self, sig: int, record: bool = True) -> None:
        child = self.child
        if child is None:
            return
        if record:
            self.sent.append(sig)
        try:
            os.killpg(child.pid, sig)
        except OSError:
            pass
        if child.returncode is not None:
            return  # reaped: its pid may be another process's by now
        try:
            if os.getpgid(child.pid) != child.pid:  # the command left its group (setsid)
                os.kill(child.pid, sig)
        except OSError:
            pass

    def group_alive(self) -> bool:
        """The command's process group still has a process (the command itself, or one it
        started: a grandchild that ignored the forwarded signal)."""
        if self.child is None:
            return False
        try:
            os.killpg(self.child.pid, 0)
        except PermissionError:
            return True
        except OSError:
            return False
        return True

    def after_exit(self) -> bool:
        """The command exited after a stop signal was forwarded: True while the ladder goes on
        for its process group (what it announced: SIGTERM, then SIGKILL), on a timer from here
        whatever the signal was (no one would know to press Ctrl-C again for a process no longer
        shown). False once SIGKILL was sent (it cannot be ignored; an unreaped zombie would
        still answer killpg) or the group is empty. Without a stop signal a process the command
        left running is its business, and stays."""
        if not self.sent or self.sent[-1] == signal.SIGKILL or not self.group_alive():
            return False
        if not self.timed or self.deadline is None:
            self.timed = True
            self.deadline = CLOCK.mono() + self.grace_s
            assert self.child is not None
            nxt = "SIGKILL" if self.sent[-1] == signal.SIGTERM else "SIGTERM"
            self.messages.append(f"the command exited, but processes it started still run in its process group "
                                 f"({self.child.pid}): {nxt} in {self.grace_s:g} s"
                                 + (f" and SIGKILL {self.grace_s:g} s later" if nxt == "SIGTERM" else "")
                                 + " if they are still running")
        return True

    def service(self, running: bool) -> None:
        """From the pump: climb the timed rung when it is due."""
        if self.deadline is not None and CLOCK.mono() >= self.deadline:
            self.deadline = None
            if running:
                self._climb(self.sent[-1], timer=True)

    def pop_messages(self) -> list[str]:
        out, self.messages = self.messages, []
        return out


PR_SET_PDEATHSIG = 1


def tie_to_parent() -> Callable[[], None] | None:
    """The child's first step (Linux): SIGTERM when gpuscope dies, even by SIGKILL, so a
    killed recorder never leaves its command running unwatched; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def tie() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # gpuscope died before the tie was made
            os._exit(128 + int(signal.SIGTERM))

    return tie
