"""The words a component's name is read by: its role guessed from its words (logs of any program).

    name_words("dataLoad_ms")  -> ["data", "load", "ms"]
    guess_role("h2d_copy")     -> ("h2d", "guessed from name 'h2d': a host-to-device copy")
    outside_role("lock_wait", lock=True) -> ("contention", ...)

GUESS_RULES is the table (first rule that matches wins); rolemodel.guess_model builds a whole
RoleModel from it, parsers/log/lines/nesting.py reads the lock and wait words. Nothing here knows
a RoleModel: this module is data and the functions over it.
"""

from __future__ import annotations

# (role, words): a component whose name holds one of the words (a word of the name: split at `_`,
# `-`, `.`, camelCase) gets the role; first rule that matches wins; h2d words also inside a word.
GUESS_RULES: tuple[tuple[str | None, str, tuple[str, ...]], ...] = (
    ("d2h", "a device-to-host copy (a read-back)", ("d2h", "dtoh", "download", "readback", "read_back", "to_host",
                                                   "to_cpu", "copy_back", "copyback")),
    (None, "no host<->device copy, no GPU work of its own (a D2D, network, disk or on-host copy; an alloc; a sync)",
     ("d2d", "dtod", "p2p", "peer", "nvlink", "network_transfer", "net_transfer", "disk_transfer", "file_transfer",
      "host_copy", "cpu_copy", "staging_copy", "malloc", "alloc", "allocation", "sync", "synchronize")),
    (None, "a collective between GPUs (NCCL): communication, not compute of the step's own", (
        "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter", "reducescatter", "alltoall",
        "all_to_all", "nccl", "collective", "reduce_model_grads", "gather_model_params")),  # (the last two: Megatron-LM's)
    (None, "a one-off setup (the model's, the data iterators'): no step's work", ("setup",)),
    ("h2d", "a host-to-device copy", ("h2d", "htod", "upload", "copy", "memcpy", "transfer", "xfer", "to_device",
                                     "todevice", "host_to_device", "to_gpu", "pcie")),
    (None, "a lock's held time (its tenure), not a wait for it", ("held", "holding", "tenure")),  # (the whole: ParsedLog)
    ("contention", "a wait for a lock", ("lock_wait", "mutex_wait", "lock", "mutex")),
    ("cpu_stall", "host-side work the GPU waits for", (
        "data", "dataloader", "loader", "load", "loading", "fetch", "prep", "prepare", "preprocess",
        "io", "read", "input", "decode", "collate", "augment", "host", "cpu")),
    # a bare wait, for a lock or for data (opposite cures): no role; beside a lock's tenure the lock's (outside_role)
    (None, "a wait for a lock or for data: the name cannot tell which", ("wait", "waiting", "blocked")),
    ("gpu_compute", "GPU work", (
        "forward", "backward", "fwd", "bwd", "compute", "kernel", "kernels", "optimizer", "optim",
        "opt", "gemm", "matmul", "attention", "attn", "infer", "inference", "model", "gpu", "cuda",
        "update", "loss_backward")),
)
#: names the CuZK model knows that any program may print: alone they do not make a log CuZK's
GENERIC_NAMES = frozenset(("h2d", "total", "synth"))
PREPOSITIONS = frozenset(("to", "of", "for", "with", "from", "into", "in", "on", "by", "at"))
#: names of aggregates that are not the log's whole: never summed (role info)
AGGREGATE_WORDS = ("total", "elapsed", "wall", "overall", "sum", "cumulative")
#: counters that name a record (the first one a log prints gives the noun)
RECORD_NOUNS = (("step", "step"), ("global_step", "step"), ("steps", "step"), ("iter", "iteration"),
                ("iteration", "iteration"), ("batch", "batch"))


def name_words(name: str) -> list[str]:
    """`data_time` -> [data, time]; `dataLoad` -> [data, load]; `h2dCopy` -> [h2d, copy]."""
    out, cur = [], ""
    for i, ch in enumerate(name):
        if ch in "_-. /":
            if cur:
                out.append(cur)
            cur = ""
        elif ch.isupper() and cur and (cur[-1].islower() or (i + 1 < len(name) and name[i + 1].islower()
                                                             and cur[-1].isupper())):
            out.append(cur)
            cur = ch
        else:
            cur += ch
    if cur:
        out.append(cur)
    return [w.lower() for w in out]


def guess_role(name: str) -> tuple[str | None, str]:
    """(role or None, how it was guessed) for one component name; a name of two kinds of time
    joined by `and` (TGIS's `queue_and_inference_time`) gets a role only where both would."""
    words = name_words(name)
    if "and" in words[1:-1]:
        cut = words.index("and")
        (a, why_a), (b, _why_b) = _guess_words(words[:cut], name), _guess_words(words[cut + 1:], name)
        if a != b:
            return None, (f"names two kinds of time ({' '.join(words[:cut])}: {a or 'no role'}; "
                          f"{' '.join(words[cut + 1:])}: {b or 'no role'}): no one role (its time is counted in other)")
        return a, why_a
    return _guess_words(words, name)


def _guess_words(words: list[str], name: str) -> tuple[str | None, str]:
    """guess_role over a name's words (`name`: as printed, for the reason)."""
    cut = (next((i for i, w in enumerate(words) if w in PREPOSITIONS), 0)
           if words[3:] and words[0] not in WAIT_WORDS else 0)
    for role, what, keys in GUESS_RULES:
        if cut and role == "cpu_stall":  # a phrase (a tree's `commit to trace data`): its object says no activity
            words = words[:cut]
        joined = "_".join(words)
        hit = next((k for k in keys if ((k in words) if "_" not in k else (k in joined))), None)
        if hit is None and role == "h2d":
            hit = next((k for k in keys if len(k) >= 4 and any(k in w for w in words)), None)  # memcpyHtoD
        if hit is None and role == "cpu_stall":
            hit = next((k for k in ("load", "prep", "data", "fetch") if any(w.startswith(k) for w in words)),
                       None)  # loading, preprocessing
        if hit is not None:
            return role, f"guessed from name {hit!r}: {what}" + (", no role (counted in other)" if role is None else "")
    if any(w in AGGREGATE_WORDS for w in words):
        return "info", "named like a total but not the record's whole: an aggregate, never summed"
    return None, f"no rule matches {name!r}: no role (its time is counted in other)"


#: words of a whole that make it a lock's tenure (parsers/log/lines/nesting.py reads them here)
LOCK_WORDS = frozenset(("held", "hold", "lock", "locked", "mutex", "tenure"))
WAIT_WORDS = frozenset(("wait", "waiting", "waited", "queue", "queued", "blocked", "acquire", "acquired"))  # lock or data?
CPU_WORDS = frozenset(("synth", "synthesis", "witness"))  # host work before the GPU's (a prover's synthesis)
OUTSIDE_WORD = "outside "  # (ParsedLog.not_parts: a time printed beside a lock's tenure, not in it)
TREE_WHY = "a timer tree's"  # (ParsedLog.not_parts: a tree's root or nested node, parsers/log/lines/trees.py)
GPU_WORDS = frozenset(("gpu", "cuda", "kernel", "kernels", "device", "h2d", "d2h", "htod", "dtoh"))


def outside_role(name: str, lock: bool) -> tuple[str | None, str]:
    """The role of a time printed outside the record's whole (beside a lock's tenure, not in its
    parentheses): never one of the split's (SPLIT_ROLES). A wait beside a lock's tenure is the wait
    for that lock (`contention`), host-side work is `cpu`, anything else none."""
    words = name_words(name)
    if lock and any(w in WAIT_WORDS for w in words):
        return "contention", "a wait printed beside the lock's tenure: the wait for the lock (contention), not a stall of the GPU"
    role, _why = guess_role(name)
    if role in ("cpu_stall", "cpu") or any(w in CPU_WORDS for w in words):
        return "cpu", "host-side work outside the whole: CPU time, not part of the split"
    return None, "outside the whole: no role (never part of the split)"
