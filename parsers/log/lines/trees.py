"""Timer trees: a program's timers printed as a tree, each child indented under its parent,
read as a tree (issue 33, class 4). The shapes, from the programs' own printing code:

- plonky2's TimingTree (`util/timing.rs`): one line per scope, `{:.4}s to {name}` after
  `| ` repeated once per level of depth, through the `log` crate (env_logger's
  `[<stamp> DEBUG plonky2::util::timing] ` prefix, or none): `2.8841s to prove`,
  `| 1.2210s to compute wires commitment`, `| | 0.8391s to build Merkle tree`.
- tracing-forest (plonky3, its users): `INFO     prove [ 1.12s | 0.91% / 100.00% ]`, each
  child after the level column (9 wide) with `│  ` or three spaces per level above it and
  `┝━ ` / `┕━ `; the brackets hold the span's time and its share(s) of the root; fields
  may follow (`dims: 2633x32768`). An event line (`┝━ ｉ [info]: ...`) holds no time.
- ark_std's print-trace (arkworks, halo2): `Start:   <label>` as a timer opens, `End:     <label>
  ......<time>` as it closes, `··` per level; the End of a child comes before its parent's
  (read_ark). Its label may hold numbers (`with degree = 19`): all its words name it.

What is read: the root (depth 0) is the whole of its tree, one record; a child of the root
(depth 1) is a part of it; a deeper node is a part of its parent, named by its path from
the root's child (`commit_wires/build_Merkle_tree`) and never counted beside it (the
reader's State `known`: `nested in ...`, as parsers/log/lines/nesting.py says of parenthesized
parts). A node's name is its own words (`commit to trace data` -> commit_to_trace_data):
never one word of it (`data`), which the role guess would take for a data stall. Every
line of one tree carries the tree's number as its counter (`round`), so the lines of one
tree form one record whatever their order (the root comes first). A root without children
(`generate Keccak trace [ 142ms | 100.00% ]`, `verify`) is a one-off stage, no record and
never the whole; a root with children is never a part, and the whole of its own tree's record
(`preprocess` beside `prove`, each once: two records, each its root's time; parsers/log/
nestrecords.py). A child whose parent line is missing (a log cut inside a tree) is damage.

False-positive guard (tests/test_linetree.py): a line that merely says `12.5s to load` in
prose (not four decimals, or words before the number) and a `[ ... ]` bracket of anything
but a time and a percentage are not tree lines (NOT_MINE: the shared reader reads them).
"""

from __future__ import annotations

import re

from gpuscope.parsers.log.lines.nesting import NESTED
from gpuscope.parsers.log.lines.reading import ReaderState
from gpuscope.parsers.log.lines.vocabulary import LINES_ONLY, NAMED
from gpuscope.parsers.numbers import MAX_MS

#: the counter every line of one tree carries (its tree's number, from 1)
TREE_COUNTER = "round"
#: the reason a root without children is no record (parsers/log/lines/records.py reads it)
LEAF_ROOT = "a timer tree's root without children: a one-off stage, no record and never the whole"
ROOT_WHY = "a timer tree's root: the whole of its own tree, never a part beside its children"

# (bounded repeats: a hostile line of spaces or bars costs linear time)
_PLONKY2 = re.compile(r"^(?:\[[^\]]{1,120}\] ?)?(?P<tree>(?:\| ){0,64})(?P<v>\d{1,7}\.\d{4})s to "
                      r"(?P<name>\S.{0,300}?)\s*$")
_FOREST = re.compile(r"^(?P<tree>(?:[│ ]  ){0,32}(?:[┝┕]━ )?)(?P<name>[^\[\] ][^\[\]]{0,300}?) \[ "
                     r"(?P<v>\d{1,9}(?:\.\d{1,9})?)(?P<u>ns|µs|μs|us|ms|s|m) \| \d+(?:\.\d+)?%(?: / \d+(?:\.\d+)?%)? \]")
# Triton VM's profile (`triton-cli --profile`): `### <root>  <time>  #Reps  Share  Category ...`, then
# a row per span, `│ ` or two spaces per level above it and `├─` / `└─`, its time (Duration's
# Debug), repetitions, share of the root, a category and a memory delta (a size, never read)
_TRITON_ROOT = re.compile(r"^### (?P<name>\S.{0,300}?)\s{2,}(?P<v>\d{1,9}(?:\.\d{1,9})?)(?P<u>ns|µs|μs|ms|s)\s+#Reps\b")
_TRITON = re.compile(r"^(?P<tree>(?:[│ ] ){0,32})[├└]─(?P<name>\S.{0,300}?)\s{2,}(?P<v>\d{1,9}(?:\.\d{1,9})?)"
                     r"(?P<u>ns|µs|μs|ms|s)\s+\d{1,12}\s+\d{1,3}(?:\.\d+)?%")
_EVENT = re.compile(r"^(?:[│ ]  ){0,32}[┝┕]━ ")
_LEVELS = ("TRACE", "DEBUG", "INFO ", "WARN ", "ERROR")
_UNIT_MS = {"ns": 1e-6, "µs": 1e-3, "μs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}
# ark_std's print-trace (arkworks, halo2): `Start:   <label>` as a timer opens, `End:     <label>
# ....<time>` as it closes (Duration's Debug: `173.935ms`, `289.709µs`, `2.341s`), `··` per level
# of depth before either; a child's End comes before its parent's (the End holds the time)
_ARK = re.compile(r"^(?P<ind>(?:\u00b7\u00b7){0,32})(?P<kw>Start|End):\s+(?P<label>\S.{0,300}?)"
                  r"(?:\s(?P<dots>\.*)(?P<v>\d{1,9}(?:\.\d{1,9})?)(?P<u>ns|µs|μs|us|ms|s))?\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]{0,16}m").sub
_NOT_WORD = re.compile(r"[^0-9A-Za-z]+")


class TreeState:
    """The open path of the tree being read: its number, the names by depth, and the roots
    seen to have children."""

    def __init__(self) -> None:
        self.number = 0
        self.path: list[str] = []
        self.parents: set[str] = set()
        self.ark: list[str] = []  # ark_std: the open timers below the root, by depth (1 first)
        self.ark_closed = True  # ark_std: no tree open (none yet, or its root's End read)
        self.ark_kids = False  # ark_std: the open tree has had a child's End
        self.ark_stages: set[str] = set()  # ark_std: roots without children read before any tree
        self.ark_run = False  # ark_std: the last root read had no children (stages: one record)


def node_name(text: str) -> str:
    """A node's name from its printed words: `FFT + blinding` -> FFT_blinding."""
    return _NOT_WORD.sub("_", text).strip("_")[:80] or "node"


def parse_tree_line(line: str) -> tuple[int, str, float, float] | None:
    """(depth, name, ms, rounding ms) of a timer tree's node line, or None."""
    m = _PLONKY2.match(line)
    if m is not None:
        return len(m["tree"]) // 2, node_name(m["name"]), float(m["v"]) * 1e3, 0.05
    if line[:5] in _LEVELS:
        m = _FOREST.match(line[9:])
        level = 3  # (tracing-forest: three columns a level)
    else:
        m = _TRITON_ROOT.match(line) if line[:4] == "### " else _TRITON.match(line)
        level = 2  # (Triton VM: two columns a level above the row's `├─`; its root `### `)
    if m is None:
        return None
    num = m["v"]
    dot = num.find(".")
    unit = _UNIT_MS[m["u"]]
    half = 0.5 * 10.0 ** -(len(num) - dot - 1 if dot >= 0 else 0) * unit
    tree = m.groupdict().get("tree")
    depth = 0 if tree is None else len(tree) // level + (level == 2)
    return depth, node_name(m["name"]), float(num) * unit, half


def is_tree_event(line: str) -> bool:
    """A tracing-forest event line inside a tree (`┝━ ｉ [info]: ...`): no time."""
    return line[:5] in _LEVELS and _EVENT.match(line[9:]) is not None


def read_tree(line: str, state: ReaderState, not_mine: object):
    """A timer tree's line -> read_line's tuple, None (an event), a damage reason, or
    `not_mine` (no tree line)."""
    if "Start:" in line or "End:" in line:
        m = _ARK.match(_ANSI("", line) if "\x1b" in line else line)
        if m is not None and (m["ind"] or m["kw"] == "End" and len(m["dots"] or "") >= 2):
            return read_ark(m, state)  # (a root's Start, an End without dots: the shared reader's)
        return not_mine
    node = parse_tree_line(line.rstrip("\r\n"))
    if node is None:
        return None if is_tree_event(line) else not_mine
    depth, name, ms, tol = node
    if ms > MAX_MS:
        return "a timer tree's time beyond any duration"
    t: TreeState = state.tree
    if depth > len(t.path):
        return "a timer tree's child without its parent's line (a cut log?)"
    del t.path[depth:]
    if depth == 0:
        t.number += 1
        if name not in t.parents:
            state.known.setdefault(name, LEAF_ROOT)
        code = NAMED  # (index 0: the root is its line's one field)
    else:
        root = t.path[0]
        if root not in t.parents:
            t.parents.add(root)
            state.known[root] = ROOT_WHY  # (a root of another name than the log's whole: never a part beside its children)
        code = -1
        if depth >= 2:
            parent = "/".join(t.path[1:])
            name = f"{parent}/{name}"
            state.known.setdefault(name, f"{NESTED}{parent!r} (a timer tree's child, indented under it): never "
                                      "counted beside it")
    t.path.append(name if depth < 2 else name.rsplit("/", 1)[1])
    return [name], [ms], [TREE_COUNTER], [float(t.number)], None, code, LINES_ONLY, tol


def read_ark(m: re.Match, st):
    """An ark_std line (its _ARK match) -> read_line's tuple, None (a Start line) or a damage
    reason. A Start below the root opens a timer (its path names its children); the root's
    own Start is never needed (a paste without it reads the same; one without digits never
    reaches a reader in the compiled scan). Every End of one tree carries the tree's number:
    a tree opens at its first line below the root, closes at its root's End. A root's End
    with children before it is the whole of its tree (a paste without it: a record of its
    children's sum, no whole); one without children (halo2's `Setup generation ...` stages,
    each alone) is a stage of the run, no whole: several such are one record's parts."""
    depth = len(m["ind"]) // 2
    name = node_name(m["label"])
    t: TreeState = st.tree
    if m["kw"] == "Start":
        if t.ark_closed:
            t.number, t.ark_closed = t.number + 1, False
            t.ark_run = False
        if depth > len(t.ark) + 1:
            return "a timer tree's child without its parent's line (a cut log?)"
        del t.ark[depth - 1:]
        t.ark.append(name)
        return None
    if m["v"] is None:
        return "a timer tree's End line without its time (a cut line?)"
    num, unit = m["v"], _UNIT_MS[m["u"]]
    ms = float(num) * unit
    dot = num.find(".")
    tol = 0.5 * 10.0 ** -(len(num) - dot - 1 if dot >= 0 else 0) * unit
    if ms > MAX_MS:
        return "a timer tree's time beyond any duration"
    if depth == 0:
        kids, t.ark_closed, t.ark_kids = t.ark_kids, True, False
        t.ark.clear()
        if not kids:
            if t.parents:  # (beside a tree with children: a one-off stage, as tracing-forest's)
                st.known.setdefault(name, LEAF_ROOT)
            else:
                if not t.ark_run:
                    t.number, t.ark_run = t.number + 1, True
                t.ark_stages.add(name)
            return [name], [ms], [TREE_COUNTER], [float(t.number)], None, -1, LINES_ONLY, tol
        t.parents.add(name)
        for leaf in t.ark_stages:
            st.known.setdefault(leaf, LEAF_ROOT)
        t.ark_stages.clear()
        st.known[name] = ROOT_WHY
        return [name], [ms], [TREE_COUNTER], [float(t.number)], None, NAMED, LINES_ONLY, tol
    if t.ark_closed:
        t.number, t.ark_closed = t.number + 1, False
        t.ark_run = False
    if len(t.ark) < depth or t.ark[depth - 1] != name:
        return "a timer tree's End without its Start line (a cut log?)"
    del t.ark[depth - 1:]
    t.ark_kids = True
    if depth >= 2:
        parent = "/".join(t.ark)
        name = f"{parent}/{name}"
        st.known.setdefault(name, f"{NESTED}{parent!r} (a timer tree's child, indented under it): never "
                                  "counted beside it")
    return [name], [ms], [TREE_COUNTER], [float(t.number)], None, -1, LINES_ONLY, tol
