"""Format detection: `cuzk` when the log has CUZK_ / TIMELINE / GPU_TIMING / FIN_TIMING
lines, else `condensed` when it has the article's keys, else `lines` when a sample of the
log reads better as timing lines as people print them (parsers/log/lines/read.py), else the
generic `kv`.

The sample is the first SNIFF_CHARS (and at most SNIFF_LINES lines) of the log. `lines` wins when its lines show what
`kv` cannot read or would misread (a `key: value` or `Label value` field, a unit printed
as a word, a counter such as `step=3` or a metric such as `loss=0.5` that kv would take
for milliseconds, a `printed_at=` time, or a field that is the whole of its line) on at
least as many lines as show a bare number under a plain `key=` (which kv reads as
milliseconds and `lines` does not). A log whose sample holds the caller's own held key
(`held_key=` other than mutex_held) stays `kv`, whose records end at that key.

parse_log asks detect_head first: a log whose first MiB holds no marker and reads as `lines`
is scanned as `lines` straight away, the scan flagging a marker met later (then detect_input
reads every byte and the log is scanned again in the format it names): the format and the
result are those of detect_input, without its pass over a long log's bytes before the scan.
"""

from __future__ import annotations

from gpuscope import native
from gpuscope.parsers.log.formats import BY_NAME
from gpuscope.parsers.log.lines.read import sniff

CUZK_MARKERS = BY_NAME["cuzk"].markers  # (parsers/log/formats.py: the one table of formats)
CONDENSED_KEYS = BY_NAME["condensed"].markers
SNIFF_CHARS = 256 * 1024
SNIFF_LINES = 1000


def detect_format(text: str, held: str | None = None) -> str:
    if any(m in text for m in CUZK_MARKERS):
        return "cuzk"
    if any(k in text for k in CONDENSED_KEYS):
        return "condensed"
    return _sniffed(text[:SNIFF_CHARS], len(text) > SNIFF_CHARS, held)


def _sniffed(head: str, longer: bool, held: str | None) -> str:
    sample = head.split("\n", SNIFF_LINES)[:SNIFF_LINES]
    if longer and len(sample) > 1:
        sample.pop()  # cut in the middle
    if sniff(sample, held if held and held != "mutex_held" else None, held):
        return "lines"
    return "kv"


CUZK_BYTES = tuple(m.encode() for m in CUZK_MARKERS)
CONDENSED_BYTES = tuple(k.encode() for k in CONDENSED_KEYS)
_OVERLAP = max(len(m) for m in CUZK_BYTES + CONDENSED_BYTES)
# every marker holds one of these (fewer passes over a block; a block showing one is then
# searched for the markers themselves, so the answer is the markers' own)
_PREFILTER = (b"_TIMING", b"_NTT_H:", b"TIMELINE,", b"mutex_", b"ntt_kernels=")
assert all(any(p in m for p in _PREFILTER) for m in CUZK_BYTES + CONDENSED_BYTES)


_MARKERS = CUZK_BYTES + CONDENSED_BYTES
_CUZK_MASK = (1 << len(CUZK_BYTES)) - 1


def _compiled():
    """The compiled scanner's `markers`, or None (not built, or GPUSCOPE_PURE_SCANNER=1)."""

    mod = native.load("scan")
    return mod if mod is not None and hasattr(mod, "markers") else None


class FormatMarker(Exception):
    """Raised by a scan that detect_head let start: a line holds a CuZK or condensed marker
    after all (parse_log then detects over every byte and scans again in the format named)."""


HEAD_BYTES = 1 << 20  # (detect_head's look: one block of detect_input's)


def has_marker(buf) -> bool:
    """Whether these bytes hold a marker of CuZK or condensed (a chunk of a scan detect_head
    let start, read by the Python scanners; the compiled splitter flags its lines itself)."""
    if not isinstance(buf, (bytes, bytearray)):
        buf = bytes(buf)  # (`in` over a memoryview compares its items, not a substring)
    return any(m in buf for m in _MARKERS)


def detect_head(inp, held: str | None = None) -> str | None:
    """`lines` when the first HEAD_BYTES of the log hold no CuZK or condensed marker and its
    head reads as `lines`: the log is then scanned as `lines` at once, its scan watching every
    line for a marker (the chunk loop of logparse.scan_input raises FormatMarker on one, and
    the log is detected and scanned again), instead of searching every byte first: the same
    format in the end, one pass less over a long log. None: detect_input decides (kv, where
    a later marker would change it; a marker in the head; an input given as bytes or text)."""
    if inp.data is not None:
        return None
    mod = _compiled()
    head = inp.head(HEAD_BYTES)
    if mod.markers(head, _MARKERS) if mod is not None else has_marker(head):
        return None
    fmt = _sniffed_input(inp, held)
    return fmt if fmt == "lines" else None


def detect_input(inp, held: str | None = None) -> str:
    """detect_format over a parsers.reader.LogInput, reading its bytes in blocks (the markers
    are ASCII: found in the bytes exactly where they are in the text) and decoding only the
    sample's head."""
    if inp.data is not None:
        blocks = (inp.data,)
    else:
        blocks = inp.blocks(1 << 20)  # (a CuZK log shows its marker in the first block)
    condensed = False
    prev = b""
    mod = _compiled()
    for block in blocks:
        seam = prev + block[:_OVERLAP]  # a marker across two blocks
        prev = (prev + block[-_OVERLAP:])[-_OVERLAP:]
        if mod is not None:  # (one C pass per marker: the C library's memmem)
            mask = mod.markers(block, _MARKERS) | mod.markers(seam, _MARKERS)
            if mask & _CUZK_MASK:
                return "cuzk"
            condensed = condensed or bool(mask & ~_CUZK_MASK)
            continue
        if not any(p in block or p in seam for p in _PREFILTER):
            continue
        if any(m in block or m in seam for m in CUZK_BYTES):
            return "cuzk"
        if not condensed:
            condensed = any(k in block or k in seam for k in CONDENSED_BYTES)
    if condensed:
        return "condensed"
    return _sniffed_input(inp, held)


def _sniffed_input(inp, held: str | None) -> str:
    """`lines` or `kv`, by the sample of the input's head (detect_format's last step)."""
    raw = inp.head(4 * SNIFF_CHARS + 4)  # (SNIFF_CHARS characters take at most 4x the bytes)
    text = str(raw, "utf-8", inp.errors)
    return _sniffed(text[:SNIFF_CHARS], len(text) > SNIFF_CHARS or inp.size > len(raw), held)
