"""Round three of tools/probe_hostile.py (issue 22): generators the earlier rounds did not have.

In-process cases (tests/hostile_check.run_cli), each with its own contract beyond problems():
- gzip in every shape: bombs past the ratio guard (log, trace, samples), several members,
  trailing garbage, cut short, gzip in gzip, other compressors' magic behind a .gz name;
- odd files for every input option (a log, --samples, --trace, --model, a run directory's
  files): FIFOs with and without a writer, symlink loops, dangling links, links to
  directories, /proc files, devices, directories, names with controls in them;
- encodings: UTF-8 BOM, UTF-16 LE/BE with and without BOM, UTF-32, Latin-1, lone CRs, for
  logs, captures, traces and models;
- traces of new shapes: JSON NaN/Infinity/1e999 literals, B/E without partners, counters
  and flows with junk, a top-level list, traceEvents of the wrong type, trailing garbage,
  thousands of streams, names with controls, BOMs;
- outputs (console, JSON, CSV, HTML, PNG, Perfetto) aimed at hostile places: an input of the
  same command (also through a link or a hard link), a directory, a missing folder,
  /dev/full, a name with controls; the inputs must be unchanged afterwards, an output that
  was refused must not exist (or be unchanged), one that was written must be whole, and no
  temporary file is left beside it.
Subprocess cases (tools/probe_gen3_sub.py):
- a file-size rlimit (RLIMIT_FSIZE, the full disk a user without root can make) on every
  writer: exit 6 or 0, never a partial output;
- SIGINT / SIGTERM / SIGHUP at a random moment to `record` and `run --backend cpu`: the exit
  is 128+N (or 0 when it ended first), stderr is gpuscope's, meta.json is whole and never
  says `running` after gpuscope is gone.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import sys
import threading
import time
import zlib
from pathlib import Path

from tests.hostile_check import POISON_TEXT

REPO = Path(__file__).resolve().parents[1]
BOUNDS = REPO / "tests" / "data" / "h200_bounds"
RUN = BOUNDS / "runs" / "hbm_bound"
EXAMPLE = REPO / "examples" / "article_excerpt.log"
BIN = Path(sys.executable).parent / "gpuscope"
NAMES = ["a\x1b[2Jb", "r\u202eq", "x\ny", "sp ace", "\u00e9t\u00e9", "t\x9b1m"]


def digest(path: Path) -> str | None:
    try:
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
    return None


class Case:
    """One generated input: argv (in-process) or a subprocess plan, and what must hold after it."""

    def __init__(self, kind: str, argv: list[str], *, stdin: bytes | None = None, inputs=(), output=None,
                 cleanup=None, poisoned: bool = False, sub=None):
        self.kind, self.argv, self.stdin, self.poisoned, self.sub = kind, argv, stdin, poisoned, sub
        self.inputs = {Path(p): digest(Path(p)) for p in inputs}
        self.output = Path(output) if output is not None else None
        self.output_before = digest(self.output) if self.output is not None else None
        self.cleanup = cleanup

    def after(self, code: int) -> list[str]:
        """What the command broke beyond problems(): an input changed, an output half-made."""
        try:
            return self._after(code)
        except OSError as e:  # a name too long to stat: nothing was made under it
            return [] if e.errno == 36 else [f"probe: {e}"]

    def _after(self, code: int) -> list[str]:
        found = []
        for p, before in self.inputs.items():
            if before is not None and digest(p) != before:
                found.append(f"an input was changed: {p.name}")
        out = self.output
        if out is not None and not str(out).startswith("/dev/"):
            parent = out.parent
            if parent.is_dir():
                stray = [q.name for q in parent.iterdir() if q.name.startswith(f".{out.name}.") or ".tmp" in q.name]
                if stray:
                    found.append(f"a temporary file left beside the output: {stray[0]}")
            if code != 0 and out.is_file() and not out.is_symlink() and digest(out) != self.output_before \
                    and out not in self.inputs:
                found.append("a refused output was written anyway")
            if code == 0 and out.suffix in (".png", ".json", ".html") and out.is_file() and not out.is_symlink():
                data = out.read_bytes()
                whole = {".png": data.startswith(b"\x89PNG") and data.endswith(b"IEND\xaeB`\x82"),
                         ".json": _json_ok(data), ".html": data.rstrip().endswith(b"</html>")}[out.suffix]
                if not whole:
                    found.append(f"an output written but not whole: {out.name}")
        if self.cleanup is not None:
            self.cleanup()
        return found


def _json_ok(data: bytes) -> bool:
    try:
        json.loads(data)
        return True
    except ValueError:
        return False


class Gen3:
    def __init__(self, seed: int, tmp: Path):
        self.r = random.Random(seed)
        self.tmp = tmp
        self.k = 0
        self.log = EXAMPLE.read_text().splitlines()
        self.kv = [f"step={i} data_ms={1 + i % 7}.5 compute_ms=12.{i} total_ms={20 + i}" for i in range(30)]
        self.samples = (RUN / "samples.csv").read_text().splitlines()[:60]
        self.query = (BOUNDS / "smi" / "hbm_bound_query.csv").read_text().splitlines()[:40]
        self.dmon = (BOUNDS / "smi" / "hbm_bound_dmon.txt").read_text().splitlines()[:30]
        doc = json.loads(gzip.decompress((BOUNDS / "traces" / "hbm_bound.json.gz").read_bytes()))
        self.trace_events = [e for e in doc["traceEvents"] if e.get("ph") == "X"][:300]
        self.trace_head = {k: v for k, v in doc.items() if k != "traceEvents"}
        self._bombs: dict[str, bytes] = {}

    def path(self, suffix: str, name: str = "in") -> Path:
        """A fresh name in the probe's folder, never one tools/probe_hostile.py's Gen makes
        (`in17.log` from both: a dangling link of one became the other's file to write)."""
        self.k += 1
        return self.tmp / f"{name}3_{self.k}{suffix}"

    def pick(self, seq):
        return self.r.choice(seq)

    # -- inputs of each kind, as text -----------------------------------------------------------
    def log_text(self) -> str:
        base = self.pick([self.log, self.kv])
        return "\n".join(base[: self.r.randrange(1, len(base) + 1)]) + "\n"

    def samples_text(self) -> tuple[str, str]:
        base = self.pick([self.samples, self.query, self.dmon])  # samples.csv, query-gpu, dmon
        return "\n".join(base[: self.r.randrange(3, len(base) + 1)]) + "\n", ".csv"

    def trace_doc(self) -> dict:
        evs = json.loads(json.dumps(self.trace_events[: self.r.randrange(1, len(self.trace_events) + 1)]))
        return {**self.trace_head, "traceEvents": evs}

    def command(self, path: str, kind: str) -> tuple[list[str], Path | None]:
        """A command over an input of `kind` (log, samples, trace), through one output."""
        r = self.r.random()
        opt = {"log": [], "samples": ["--samples"], "trace": ["--trace"]}[kind] if self.r.random() < 0.3 else []
        src = [*opt, path] if not opt else [str(EXAMPLE), *opt, path] if kind != "samples" else [str(RUN), *opt, path]
        if r < 0.45:
            return ["analyze", *src, "--json"], None
        if r < 0.6:
            return ["analyze", *src, self.pick(["-v", "--records"])], None
        if r < 0.7:
            out = self.path("_csv")
            return ["analyze", *src, "--csv", str(out)], out / "components.csv"
        if r < 0.8:
            out = self.path(".html")
            return ["analyze", *src, "--html", str(out)], out
        if r < 0.9:
            out = self.path(".png")
            return ["plot", *src, "-o", str(out)], out
        out = self.path(".json", "pf")
        return ["export", *src, "--perfetto", str(out)], out

    # -- gzip in every shape --------------------------------------------------------------------
    def bomb(self, what: str) -> bytes:
        """A gzip of ~96 MiB of filler behind a little real text: past the ratio floor."""
        if what not in self._bombs:
            z = zlib.compressobj(9, zlib.DEFLATED, 31)
            head = {"log": self.log_text(), "samples": self.samples_text()[0],
                    "trace": '{"traceEvents": [' + json.dumps(self.trace_events[0]) + ", "}[what].encode()
            filler = {"log": b"\n", "samples": b"\n", "trace": b" "}[what] * (1 << 20)
            parts = [z.compress(head)] + [z.compress(filler) for _ in range(96)] + [z.flush()]
            self._bombs[what] = b"".join(parts)
        return self._bombs[what]

    def case_gzip(self) -> Case:
        kind = self.pick(["log", "samples", "trace"])
        text = {"log": self.log_text, "samples": lambda: self.samples_text()[0],
                "trace": lambda: json.dumps(self.trace_doc())}[kind]().encode()
        shape = self.pick(["bomb", "members", "trailing", "cut", "nested", "magic", "empty", "header_only"])
        if shape == "bomb" and self.r.random() < 0.6:
            data = self.bomb(kind)
        elif shape == "bomb" or shape == "members":
            half = len(text) // 2
            data = gzip.compress(text[:half]) + gzip.compress(text[half:])
        elif shape == "trailing":
            data = gzip.compress(text) + self.pick([b"\x00" * 10, b"garbage", os.urandom(30)])
        elif shape == "cut":
            g = gzip.compress(text)
            data = g[: self.r.randrange(10, max(11, len(g)))]
        elif shape == "nested":
            data = gzip.compress(gzip.compress(text))
        elif shape == "magic":
            data = self.pick([b"BZh91AY&SY", b"\xfd7zXZ\x00\x00", b"PK\x03\x04", b"\x28\xb5\x2f\xfd"]) + os.urandom(200)
        elif shape == "empty":
            data = gzip.compress(b"")
        else:
            data = gzip.compress(text)[:10]
        suffix = {"log": ".log.gz", "samples": ".csv.gz", "trace": ".json.gz"}[kind]
        p = self.path(suffix)
        p.write_bytes(data)
        if self.r.random() < 0.15 and kind == "log":
            return Case(f"gzip {shape} (stdin)", ["analyze", "-", "--json"], stdin=data)
        argv, out = self.command(str(p), kind)
        return Case(f"gzip {shape} ({kind})", argv, inputs=[p], output=out)

    # -- odd files --------------------------------------------------------------------------------
    def _fifo_writer(self, p: Path, data: bytes, delay: float) -> None:
        def write():
            time.sleep(delay)
            for _ in range(100):  # until the command opens it for reading (ENXIO before)
                try:
                    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                return  # nobody opened it: the command refused it first
            try:
                os.set_blocking(fd, True)
                os.write(fd, data)
            except OSError:
                pass
            finally:
                os.close(fd)

        threading.Thread(target=write, daemon=True).start()

    def case_odd_file(self) -> Case:
        kind = self.pick(["log", "samples", "trace", "model", "rundir"])
        shape = self.pick(["fifo_writer", "fifo_silent", "loop", "dangling", "link_dir", "proc", "dev", "dir",
                           "control_name", "link_ok", "empty"])
        name = self.pick(NAMES) if shape == "control_name" else "in"
        suffix = {"log": ".log", "samples": ".csv", "trace": ".json", "model": ".toml", "rundir": "_run"}[kind]
        text = {"log": self.log_text, "samples": lambda: self.samples_text()[0],
                "trace": lambda: json.dumps(self.trace_doc()), "model": lambda: 'held = "total"\n',
                "rundir": lambda: ""}[kind]()
        p = self.path(suffix, name)
        if kind == "rundir":
            p.mkdir()
            for f in ("meta.json", "samples.csv", "timing.log"):
                (p / f).write_bytes((RUN / f).read_bytes())
            target = p / self.pick(["timing.log", "samples.csv", "meta.json", "spans.csv"])
            if target.exists():
                target.unlink()
            self._odd(target, shape, (RUN / "timing.log").read_bytes() if target.name == "timing.log" else b"x,y\n")
            argv = ["analyze", str(p), self.pick(["--json", "-v"])]
            return Case(f"odd {shape} (run directory {target.name})", argv)
        self._odd(p, shape, text.encode())
        if kind == "model":
            return Case(f"odd {shape} (model)", ["analyze", str(EXAMPLE), "--model", str(p)])
        argv, out = self.command(str(p), kind)
        return Case(f"odd {shape} ({kind})", argv, output=out)

    def _odd(self, p: Path, shape: str, data: bytes) -> None:
        if shape == "fifo_writer":
            os.mkfifo(p)
            self._fifo_writer(p, data, self.r.uniform(0, 0.1))
        elif shape == "fifo_silent":
            os.mkfifo(p)
        elif shape == "loop":
            p.symlink_to(p.name)
        elif shape == "dangling":
            p.symlink_to(self.tmp / "nowhere" / "x")
        elif shape == "link_dir":  # a small folder (the probe's own, of thousands of inputs, is slow by size)
            small = self.tmp / f"small{self.k}"
            small.mkdir()
            (small / "a.log").write_bytes(data)
            (small / "b.json").write_text(json.dumps(self.trace_doc()))
            p.symlink_to(small)
        elif shape == "proc":
            p.symlink_to(self.pick(["/proc/self/status", "/proc/cpuinfo", "/proc/self/maps", "/proc/uptime",
                                    "/proc/self/environ"]))
        elif shape == "dev":
            p.symlink_to(self.pick(["/dev/null", "/dev/zero", "/dev/urandom", "/dev/full"]))
        elif shape == "dir":
            p.mkdir()
        elif shape == "link_ok":
            real = p.with_name(p.name + ".real")
            real.write_bytes(data)
            p.symlink_to(real.name)
        elif shape == "empty":
            p.write_bytes(b"")
        else:
            p.write_bytes(data)

    # -- encodings ----------------------------------------------------------------------------
    def case_encoding(self) -> Case:
        kind = self.pick(["log", "samples", "trace", "model"])
        text = {"log": self.log_text, "samples": lambda: self.samples_text()[0],
                "trace": lambda: json.dumps(self.trace_doc(), ensure_ascii=self.r.random() < 0.5),
                "model": lambda: '# mod\u00e8le\nheld = "total"\n[roles]\nh2d = ["h2d"]\n'}[kind]()
        enc = self.pick(["bom8", "utf16", "utf16le", "utf16be", "utf32", "latin1", "cr", "bom_cr", "nul_tail"])
        if enc == "cr" or enc == "bom_cr":
            text = text.replace("\n", "\r")
        data = {"bom8": lambda: b"\xef\xbb\xbf" + text.encode(), "utf16": lambda: text.encode("utf-16"),
                "utf16le": lambda: text.encode("utf-16-le"), "utf16be": lambda: text.encode("utf-16-be"),
                "utf32": lambda: text.encode("utf-32"), "latin1": lambda: (text + "# caf\u00e9\n").encode("latin-1", "replace"),
                "cr": lambda: text.encode(), "bom_cr": lambda: b"\xef\xbb\xbf" + text.encode(),
                "nul_tail": lambda: text.encode() + b"\x00" * self.r.randrange(1, 5000)}[enc]()
        suffix = {"log": ".log", "samples": ".csv", "trace": ".json", "model": ".toml"}[kind]
        p = self.path(suffix)
        p.write_bytes(data)
        if kind == "model":
            return Case(f"encoding {enc} (model)", ["analyze", str(EXAMPLE), "--model", str(p)], inputs=[p])
        if kind == "log" and self.r.random() < 0.2:
            return Case(f"encoding {enc} (stdin)", ["analyze", "-", self.pick(["--json", "-v"])], stdin=data)
        argv, out = self.command(str(p), kind)
        return Case(f"encoding {enc} ({kind})", argv, inputs=[p], output=out)

    # -- traces of new shapes ---------------------------------------------------------------------
    def case_trace(self) -> Case:
        doc = self.trace_doc()
        evs = doc["traceEvents"]
        shape = self.pick(["nan", "be", "counters", "flows", "list", "events_type", "trailing", "streams",
                           "names", "dur", "meta", "jsonl", "dup_keys"])
        poisoned = False
        body: str | None = None
        if shape == "nan":
            e = self.pick(evs)
            e[self.pick(["ts", "dur"])] = "__LIT__"
            body = json.dumps(doc).replace('"__LIT__"', self.pick(["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]))
        elif shape == "be":
            for e in self.r.sample(evs, min(len(evs), 5)):
                e["ph"] = self.pick(["B", "E"])
                e.pop("dur", None)
        elif shape == "counters":
            evs += [{"ph": "C", "name": "c", "pid": 0, "ts": self.pick([1e308, -1, "x", None, 5]),
                     "args": self.pick([{"v": "x"}, {"v": 1e308}, [], None, {"v": {"w": 1}}])} for _ in range(5)]
        elif shape == "flows":
            evs += [{"ph": self.pick(["s", "f", "t"]), "id": self.pick([2**70, "x", None, 1]), "pid": 0, "tid": 0,
                     "ts": evs[0].get("ts"), "cat": "ac2g", "name": "f"} for _ in range(5)]
        elif shape == "list":
            body = json.dumps(evs)
        elif shape == "events_type":
            doc["traceEvents"] = self.pick([{}, "x", 5, None, {"a": evs}])
        elif shape == "trailing":
            body = json.dumps(doc) + self.pick(["garbage", "\x00\x00", "}", "]", json.dumps(doc)])
        elif shape == "streams":
            n = self.r.randrange(500, 3000)
            base = [e for e in evs if e.get("cat") == "kernel"] or evs
            evs[:] = [{**base[i % len(base)], "ts": float(base[0].get("ts") or 0) + 3.0 * i, "dur": 2.0,
                       "args": {**(base[i % len(base)].get("args") or {}), "stream": i % n}} for i in range(n * 2)]
        elif shape == "names":
            for e in self.r.sample(evs, min(len(evs), 10)):
                e["name"] = self.pick(NAMES + ["x" * 5000, "", POISON_TEXT[0]])
        elif shape == "dur":
            for e in self.r.sample(evs, min(len(evs), 10)):
                e["dur"] = self.pick([-5, 0, 1e18, "3", [1], 1e-300])
                poisoned = poisoned or e["dur"] == 1e18
        elif shape == "meta":
            evs += [{"ph": "M", "name": self.pick(["process_name", "thread_name", "process_labels"]),
                     "pid": self.pick([0, 2**64, "x"]), "tid": 0, "args": self.pick([{"name": "\x1b[2J"}, None, []])}]
        elif shape == "jsonl":
            body = "\n".join(json.dumps(e) for e in evs)
        elif shape == "dup_keys":
            body = json.dumps(doc).replace('"ts":', '"ts": "x", "ts":', 3)
        data = (body if body is not None else json.dumps(doc)).encode()
        p = self.path(".json")
        p.write_bytes(data)
        argv, out = self.command(str(p), "trace")
        return Case(f"trace {shape}", argv, inputs=[p], output=out, poisoned=poisoned)

    # -- outputs aimed at hostile places ----------------------------------------------------------
    def case_output(self) -> Case:
        d = self.path("_o")
        d.mkdir()
        log = d / "timing.log"
        log.write_bytes(EXAMPLE.read_bytes())
        trace = d / "t.json"
        trace.write_text(json.dumps(self.trace_doc()))
        src = self.pick([[str(log)], [str(log), "--trace", str(trace)], [str(trace)]])
        where = self.pick(["input", "link_to_input", "hardlink", "dir", "missing_dir", "dev_full", "control_name",
                           "existing", "dot_dot", "long_name"])
        if where == "input":
            out = Path(self.pick([a for a in src if a != "--trace"]))
        elif where == "link_to_input":
            out = d / "link.out"
            out.symlink_to(log)
        elif where == "hardlink":
            out = d / "hard.out"
            os.link(log, out)
        elif where == "dir":
            out = d
        elif where == "missing_dir":
            out = d / "no" / "such" / "x.out"
        elif where == "dev_full":
            out = Path("/dev/full")
        elif where == "control_name":
            out = d / (self.pick(NAMES) + ".out")
        elif where == "existing":
            out = d / "old.out"
            out.write_text("old")
        elif where == "dot_dot":
            out = d / ".." / (d.name + "_dd.out")
        else:
            out = d / ("n" * 300 + ".out")
        how = self.pick(["html", "csv", "png", "perfetto", "json_stdout"])
        suffix = {"html": ".html", "png": ".png", "perfetto": ".json", "csv": "", "json_stdout": ""}[how]
        if where in ("missing_dir", "control_name", "existing", "dot_dot", "long_name") and suffix:
            out = out.with_suffix(suffix)
            if where == "existing":
                out.write_text("old")
        argv = {"html": ["analyze", *src, "--html", str(out)], "csv": ["analyze", *src, "--csv", str(out)],
                "png": ["plot", *src, "-o", str(out)], "perfetto": ["export", *src, "--perfetto", str(out)],
                "json_stdout": ["analyze", *src, "--json"]}[how]
        return Case(f"output {how} -> {where}", argv, inputs=[log, trace], output=out if how != "csv" else None)

    def case_cli4(self) -> Case:
        from tools.probe_cli4 import Cli4

        return Cli4(self).case()

    def cases(self, n: int, subprocess_share: float = 0.03):
        from tools.probe_gen3_sub import case_fsize, case_signal

        kinds = [(self.case_gzip, 16), (self.case_odd_file, 22), (self.case_encoding, 18), (self.case_trace, 22),
                 (self.case_output, 22)]
        kinds.append((self.case_cli4, 14))  # round four's CLI, terminal and record (tools/probe_cli4.py)
        total = sum(w for _, w in kinds)
        for _ in range(n):
            if self.r.random() < subprocess_share:
                yield self.pick([case_fsize, case_signal])(self)
                continue
            x = self.r.uniform(0, total)
            for fn, w in kinds:
                x -= w
                if x <= 0:
                    yield fn()
                    break
