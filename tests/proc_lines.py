"""A process's output streams read line by line on threads, for tests that act on what a real
process prints (send a signal once it says it is ready): a silent process fails the test at a
timeout instead of blocking it."""

from __future__ import annotations

import queue
import threading
import time
from typing import IO


class Lines:
    """`Lines(out=proc.stdout, err=proc.stderr)`: every line with its stream's name, as read."""

    def __init__(self, **streams: IO[str]) -> None:
        self._q: queue.Queue[tuple[str, str]] = queue.Queue()
        self.seen: list[tuple[str, str]] = []
        self._threads = [threading.Thread(target=self._read, args=(name, f), daemon=True)
                         for name, f in streams.items()]
        for t in self._threads:
            t.start()

    def _read(self, name: str, f: IO[str]) -> None:
        for line in f:
            self._q.put((name, line.rstrip("\n")))

    def wait_for(self, text: str, timeout: float = 15.0) -> str:
        """The first line (of any stream) holding `text`; AssertionError at the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.seen.append(self._q.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                break
            if text in self.seen[-1][1]:
                return self.seen[-1][1]
        raise AssertionError(f"no {text!r} within {timeout} s; seen {self.seen}")

    def text(self, name: str) -> str:
        """All of stream `name`'s lines, once the process has ended."""
        for t in self._threads:
            t.join(timeout=10)
        while not self._q.empty():
            self.seen.append(self._q.get())
        return "".join(line + "\n" for n, line in self.seen if n == name)
