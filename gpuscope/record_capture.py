"""How `gpuscope record` captures its command's output (gpuscope.recorder).

The child's stdout is a pseudo-terminal (`open_pty`: C stdio and Python flush each line as
they print it), its stderr a pipe; each stream is a `StreamCapture`: passed through to ours as
it comes, cut into lines for timing.log (`log_text`: what a terminal would show), each line
stamped with the arrival of the read that completed it, and counted for bursts (lines that
arrived together: a buffer flushed, their stamps not their print times).
"""

from __future__ import annotations

import codecs
import fcntl
import os
import pty
import re
import subprocess
import termios
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscope.rundir import TimingLogWriter

MAX_LINE_BYTES = 1 << 20  # a "line" this long without a newline is cut into the log as it is
# what ends a line for timing.log: a newline (CRLF as one), or a carriage return that a redraw
# follows (a progress bar's states, each stamped when the next redraw came: a tqdm bar of 120
# iterations is 120 states, not its last one); a \r at a read's end waits for what follows it
_LINE_END = re.compile(rb"\r?\n|\r(?=[^\n])")

# a burst: BURST_MIN_LINES or more lines of one stream, each at most BURST_GAP_S after the
# previous, that carry at least BURST_MIN_BYTES (a stdio buffer flushed: 4096 bytes in C,
# 8192 in Python) or arrived at the stream's end (the buffer flushed at exit). A block of
# lines a program prints at once (a prover's tenure, 5-10 short lines) is neither.
BURST_GAP_S = 0.001
BURST_MIN_LINES = 5
BURST_MIN_BYTES = 2048
BURST_AT_END_S = 0.05
BURST_WARN_SHARE = 0.5  # warn when at least this share of all lines arrived in bursts

# terminal control sequences: CSI (colours, cursor moves, erase), OSC (titles, links), the
# control strings DCS, SOS, PM and APC (ESC P / X / ^ / _ ... ESC \\: text no terminal shows,
# dropped whole, payload and all, else analyze read timing values from it), and the two-byte
# escapes, in their 7-bit (ESC [) and 8-bit (U+009B, U+009D, U+0090, ...) forms; then every
# other control character but tab: C0, DEL, C1, and the bidi overrides, isolates and marks and
# line separators that make a line read other than it is (U+202E). A string left open at the
# end of a line goes on in the next (StreamCapture: `open_string`), as a terminal swallows it.
_STRING_BODY = r"(?:[^\x1b\x9c\x18\x1a]|\x1b(?!\\))*"  # (CAN, SUB: abandon the string, as a terminal does)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?"
                      r"|[PX^_]" + _STRING_BODY + r"(?:\x1b\\|\x9c)?|[@-Z\\-_])"
                      r"|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x9c]*[\x07\x9c]?"
                      r"|[\x90\x98\x9e\x9f]" + _STRING_BODY + r"(?:\x1b\\|\x9c)?")
# a control string (DCS, SOS, PM, APC) that the line leaves open: it ends at its ST
_OPEN_STRING = re.compile(r"(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])" + _STRING_BODY + r"\Z")
_STRING_END = re.compile(r"\x1b\\|[\x9c\x18\x1a]")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def log_text(line: str) -> str:
    """A line of the child's output as timing.log keeps it: what a terminal would show.

    `\r` before the newline (CRLF) dropped; terminal control sequences removed (a control
    string's payload too); a line redrawn with `\r` (a progress bar) reaches here one state at
    a time (StreamCapture cuts at each redraw); other control characters (a NUL would make the
    log look binary) removed. Our own terminal gets the bytes as they came.
    """
    text = _ESCAPES.sub("", line.rstrip("\r"))
    if "\r" in text:
        text = text.rsplit("\r", 1)[1]
    return _CONTROLS.sub("", text)


class StreamCapture:
    """One output stream of the child (stdout or stderr, a pty master or a pipe): passed
    through to ours as it comes, cut into lines for timing.log, each line stamped with the
    arrival of the read that completed it."""

    def __init__(self, name: str, fd: int, dst: IO[str] | None, log: TimingLogWriter | None) -> None:
        self.name, self.fd, self.dst, self.log = name, fd, dst, log
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.partial = b""
        self.stamps: list[float] = []  # arrival of each line (CLOCK.mono)
        self.sizes: list[int] = []  # its bytes
        self.ended_at: float | None = None  # EOF, or when we stopped reading
        self.open_string = False  # a DCS/SOS/PM/APC string goes on past the last line's end

    def feed(self, data: bytes, now: float) -> None:
        self._pass_through(self.decoder.decode(data))
        buf, start = self.partial + data, 0
        for m in _LINE_END.finditer(buf):
            raw = buf[start:m.start()]
            if raw or m.group() != b"\r":  # (nothing before a redraw: no state, no line)
                self._line(raw, now)
            start = m.end()
        self.partial = buf[start:]
        if len(self.partial) > MAX_LINE_BYTES:
            self._line(self.partial, now)
            self.partial = b""

    def close(self, now: float) -> None:
        """EOF (or the end of the drain): the unfinished last line, then our end of the stream."""
        self._pass_through(self.decoder.decode(b"", final=True))
        if self.partial:
            self._line(self.partial, now)
            self.partial = b""
        self.ended_at = now
        try:
            os.close(self.fd)
        except OSError:
            pass

    def _line(self, raw: bytes, now: float) -> None:
        if self.log is not None:
            text = raw.decode("utf-8", errors="replace")
            if self.open_string:  # the payload of a string an earlier line opened, up to its ST
                end = _STRING_END.search(text)
                text = text[end.end():] if end else ""
                self.open_string = end is None
            if not self.open_string:
                self.open_string = _OPEN_STRING.search(text.rstrip("\r")) is not None
                self.log.write_line(log_text(text), now)
        self.stamps.append(now)
        self.sizes.append(len(raw) + 1)

    def _pass_through(self, text: str) -> None:
        if not text or self.dst is None:
            return
        try:
            self.dst.write(text)
            self.dst.flush()
        except (OSError, ValueError):  # our stream closed (| head) or our terminal gone: keep logging
            self.dst = None

    def burst_lines(self) -> int:
        """How many of this stream's lines arrived in bursts (see BURST_* above)."""
        n, i, stamps = 0, 0, self.stamps
        while i < len(stamps):
            j = i + 1
            while j < len(stamps) and stamps[j] - stamps[j - 1] <= BURST_GAP_S:
                j += 1
            at_end = self.ended_at is not None and self.ended_at - stamps[j - 1] <= BURST_AT_END_S
            if j - i >= BURST_MIN_LINES and (sum(self.sizes[i:j]) >= BURST_MIN_BYTES or at_end):
                n += j - i
            i = j
        return n


def read_chunk(fd: int) -> bytes:
    """What is there to read; b"" at EOF. A pty master says EIO once no process holds the
    terminal (Linux's way of saying EOF); any other error ends that stream too, rather than the
    recording (the child must not be left running with meta.json `running`)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def terminal_fd() -> int | None:
    """The first of our stdout, stderr, stdin that is a terminal."""
    for fd in (1, 2, 0):
        try:
            if os.isatty(fd):
                return fd
        except OSError:
            pass
    return None


def copy_winsize(src: int | None, dst: int) -> bool:
    if src is None:
        return False
    try:
        fcntl.ioctl(dst, termios.TIOCSWINSZ, fcntl.ioctl(src, termios.TIOCGWINSZ, b"\0" * 8))
        return True
    except OSError:
        return False


def open_pty() -> tuple[int, int] | str:
    """(master, slave) of a pseudo-terminal for the child's stdout, or why there is none.

    Output post-processing (ONLCR: \n -> \r\n) is turned off, so the child's bytes arrive as
    it wrote them; the window size is ours when we are on a terminal (else 0x0, as for a
    terminal that does not say)."""
    try:
        master, slave = pty.openpty()
    except OSError as e:
        return f"no pseudo-terminal available ({e.strerror or e})"
    try:
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    except termios.error:
        pass  # then \r\n arrives: log_text drops the \r
    copy_winsize(terminal_fd(), slave)
    return master, slave


def stdin_for_child() -> int | None:
    """The child's stdin: ours when it is a file or a pipe (`... | gpuscope record -- cmd`
    works); /dev/null when ours is a terminal or closed. The child runs in its own process
    group, in the terminal's background: reading the terminal would stop it (SIGTTIN) and
    gpuscope would wait for ever."""
    try:
        os.fstat(0)
        return subprocess.DEVNULL if os.isatty(0) else None
    except OSError:
        return subprocess.DEVNULL
