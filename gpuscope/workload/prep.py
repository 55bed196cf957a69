"""The prep thread of one partition: split the 0/1 witness scalars from the rest and build the
bitmap of the ones (batch_add sums the points whose scalar is 1, the tail MSM takes the
others), on the CPU while the GPU uploads and computes H. The worker joins it at the barrier
(barrier_wait); an error in it is re-raised there.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from gpuscope.workload import timinglog as tl

if TYPE_CHECKING:
    from gpuscope.clock import Clock
    from gpuscope.workload.synth import Partition


class PrepThread:
    """`start()` it at pickup; after `join()`, `ones` (uint8 bitmap) or `error` is set."""

    def __init__(self, part: Partition, clock: Clock, log: tl.TimingLog, gpu: int, worker: int):
        self.part = part
        self.clock = clock
        self.log = log
        self.gpu = gpu
        self.worker = worker
        self.ones: np.ndarray | None = None
        self.n_ones = 0
        self.n_zeros = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"prep-{part.index}", daemon=True)

    def start(self) -> PrepThread:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join()

    def _run(self) -> None:
        try:
            self._split()
        except BaseException as e:  # noqa: BLE001 - re-raised at the barrier
            self.error = e

    def _split(self) -> None:
        t0 = self.clock.mono()
        s64 = self.part.scalars.view(np.uint64)  # (m, 4) little-endian 64-bit words
        hi_zero = (s64[:, 1] | s64[:, 2] | s64[:, 3]) == 0
        ones = hi_zero & (s64[:, 0] == 1)
        zeros = hi_zero & (s64[:, 0] == 0)
        self.ones = ones.astype(np.uint8)
        self.n_ones = int(ones.sum())
        self.n_zeros = int(zeros.sum())
        t1 = self.clock.mono()
        self.log.line(tl.line_prep_msm(t1 - t0), t1)
        self.log.span(t0, t1, self.gpu, self.worker, self.part.index, "prep")
