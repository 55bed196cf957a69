"""The tracing program's words for the trace rules' advice (rules/trace.py): how to pin a buffer and
what drains the GPU's queue, in PyTorch's words for a Kineto trace, JAX's for an XLA one and the
CUDA API's for an Nsight export (any CUDA program), chosen by the trace's reader
(TraceFrames.reader: `sqlite3` for an Nsight export, `(an XLA trace ...)` for XLA's)."""

from __future__ import annotations

# how to pin, in the words of the program that made the trace (its reader says which)
PIN_HOW = {
    "kineto": "Pin the host buffers (tensor.pin_memory(), DataLoader(pin_memory=True), or torch.empty(..., "
              "pin_memory=True) for read-backs) and copy with non_blocking=True",
    "xla": "Copy from pinned host memory (in JAX, arrays placed with memory_kind='pinned_host', or batches a "
           "loader stages in pinned buffers)",
    "nsys": "Allocate the host buffers pinned (cudaMallocHost or cudaHostAlloc, or cudaHostRegister on memory the "
            "program has; in PyTorch tensor.pin_memory()) and copy with cudaMemcpyAsync on a stream of its own",
}


# what drains the queue, in the same words
SYNC_HOW = {
    "kineto": ".item(), .cpu(), print(tensor), bool(tensor) or torch.cuda.synchronize()",
    "xla": "a device-to-host transfer (np.asarray(x), x.item(), float(x), print(x)) or block_until_ready()",
    "nsys": "cudaStreamSynchronize, cudaDeviceSynchronize, a cudaEventSynchronize or a blocking cudaMemcpy "
            "(in PyTorch .item(), .cpu() or torch.cuda.synchronize())",
}


def origin(reader: str) -> str:
    """Which program's words suit a trace by its reader (TraceFrames.reader): nsys, xla or kineto."""
    return "nsys" if reader.startswith("sqlite") else "xla" if "XLA" in reader else "kineto"


def pin_how(reader: str) -> str:
    """PIN_HOW for a trace's reader."""
    return PIN_HOW[origin(reader)]
