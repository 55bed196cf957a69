"""Probe every reader with generated hostile inputs (issue 22) and report what breaks the
contract of tests/hostile_check.py (exit codes, one-line messages, no raw controls, no
poisoned value read as a number, no slow input).

    .venv/bin/python tools/probe_hostile.py [--n 3200] [--seed 1] [--budget 900] [--out DIR]

Inputs (in a temporary folder, removed at the end): timing logs of every format with their
numbers poisoned (other scripts' digits, 98_765, 1e308), control and escape characters, BOMs,
UTF-16, NULs, cut lines, gzip (and small bombs), standard input; samples.csv, nvidia-smi dmon
and query-gpu captures with poisoned cells and absurd indices; profiler traces with absurd
ids, times, types, nesting, cut documents; run directories with mistyped meta.json,
spans.csv, FIFOs and links in place of their files; role models (TOML) mistyped, deep, with
escapes; sources from another day. Each runs through one command (mostly `analyze --json`;
some `analyze`, `-v`, `--csv`, `--html`, `plot`, `export`). Prints one line per finding
class and a total; exit 1 when anything was found.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import itertools
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.hostile_check import POISON_TEXT, problems, run_cli  # noqa: E402
from tools.probe_round4_readers import round4_readers  # noqa: E402

DATA = REPO / "tests" / "data"
BOUNDS = DATA / "h200_bounds"
RUN = BOUNDS / "runs" / "hbm_bound"

CONTROLS = ["\x1b[2J", "\x1b]0;t\x07", "\x1b]8;;http://e.x/\x1b\\", "\x9b31m", "\u202e", "\x07", "\x00", "\x7f",
            "\r", "\ufeff", "\u2028", "[red]", ":smile:", "$x^2$"]
ABSURD = ["1e308", "-1e308", "1e20", "99999999999999999999", "-1", "nan", "inf", "-0", "0x10", "1e-400", "",
          "\u0664\u0665", "\uff14\uff15", "4_5", "12..", "9876'5432", "١٢٣"]


def _lines_of(path: Path, n: int) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return [ln.rstrip("\n") for _, ln in zip(range(n), f, strict=False)]


class Gen:
    def __init__(self, seed: int, tmp: Path):
        self.r = random.Random(seed)
        self.tmp = tmp
        self.k = 0
        self.logs = {
            "cuzk": _lines_of(REPO / "examples" / "cuzk_daemon.log", 120),
            "condensed": _lines_of(REPO / "examples" / "article_excerpt.log", 40),
            "stamped": _lines_of(RUN / "timing.log", 60),
            "kv": [f"step={i} data_ms={1 + i % 7}.5 compute_ms=12.{i} total_ms={20 + i}" for i in range(40)],
            "lines": [f"[epoch 0] step {i}/40 loss: 6.9 data: 131.{i}ms compute: 12.5ms step: 143.9ms"
                      for i in range(40)],
            "progress": [f"Epoch: [0][{i:3d}/100]  Time 0.257 ( 0.257)  Data 0.175 ( 0.175)  Loss 6.9" for i in range(40)],
        }
        self.samples = (RUN / "samples.csv").read_text().splitlines()[:80]
        self.query = (BOUNDS / "smi" / "hbm_bound_query.csv").read_text().splitlines()[:60]
        self.dmon = (BOUNDS / "smi" / "hbm_bound_dmon.txt").read_text().splitlines()[:40]
        doc = json.loads(gzip.decompress((BOUNDS / "traces" / "hbm_bound.json.gz").read_bytes()))
        evs = [e for e in doc["traceEvents"] if e.get("ph") == "X"][:400]
        self.trace = {k: v for k, v in doc.items() if k != "traceEvents"} | {"traceEvents": evs}

    def path(self, suffix: str) -> Path:
        self.k += 1
        return self.tmp / f"in{self.k}{suffix}"

    # -- mutations of text ---------------------------------------------------------------------
    def poison_numbers(self, line: str) -> str:
        out, i = [], 0
        import re

        for m in re.finditer(r"\d+(?:\.\d+)?", line):
            out.append(line[i:m.start()])
            out.append(self.r.choice(POISON_TEXT + ABSURD) if self.r.random() < 0.5 else m.group())
            i = m.end()
        out.append(line[i:])
        return "".join(out)

    def mutate_line(self, line: str) -> tuple[str, bool]:
        r = self.r.random()
        if r < 0.35:
            return self.poison_numbers(line), True
        if r < 0.55:
            at = self.r.randrange(len(line) + 1)
            return line[:at] + self.r.choice(CONTROLS) + line[at:], False
        if r < 0.65:
            return line[: self.r.randrange(len(line) + 1)], False
        if r < 0.72:
            return line + " " + line, False
        if r < 0.78:
            return f"comp_{self.r.randrange(10**6)}_ms=1.5 " + line, False
        return line, False

    def log_text(self) -> tuple[str, bool]:
        base = self.logs[self.r.choice(list(self.logs))]
        lines, poisoned = [], False
        for ln in base[: self.r.randrange(1, len(base) + 1)]:
            m, p = self.mutate_line(ln)
            lines.append(m)
            poisoned |= p
        sep = self.r.choice(["\n", "\n", "\r\n", "\n\n"])
        text = sep.join(lines) + (sep if self.r.random() < 0.8 else "")
        return text, poisoned

    def encode(self, text: str) -> bytes:
        r = self.r.random()
        if r < 0.08:
            return b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass")
        if r < 0.12:
            return text.encode("utf-16", "surrogatepass")
        if r < 0.15:
            return text.encode("utf-8", "surrogatepass")[: self.r.randrange(1, 50)] + bytes(
                self.r.randrange(256) for _ in range(64))
        return text.encode("utf-8", "surrogatepass")

    # -- the cases -------------------------------------------------------------------------------
    def command(self, path: str) -> list[str]:
        r = self.r.random()
        if r < 0.80:
            return ["analyze", path, "--json"]
        if r < 0.88:
            return ["analyze", path, *(["-v"] if self.r.random() < 0.5 else ["--records"])]
        if r < 0.91:
            return ["analyze", path, "--csv", str(self.path("_csv"))]
        if r < 0.94:
            return ["analyze", path, "--html", str(self.path(".html"))]
        if r < 0.97:
            return ["plot", path, "-o", str(self.path(".png"))]
        return ["export", path, "--perfetto", str(self.path(".json"))]

    def case_log(self):
        text, poisoned = self.log_text()
        data = self.encode(text)
        if self.r.random() < 0.1:
            data = gzip.compress(data)
        if self.r.random() < 0.1:
            return ["analyze", "-", "--json"], data, poisoned, "log (stdin)"
        p = self.path(".log.gz" if data[:2] == b"\x1f\x8b" else ".log")
        p.write_bytes(data)
        return self.command(str(p)), None, poisoned, "log"

    def case_samples(self):
        kind = self.r.choice(["csv", "query", "dmon"])
        base = {"csv": self.samples, "query": self.query, "dmon": self.dmon}[kind]
        head_n = 2 if kind == "dmon" else 1
        rows, poisoned = list(base[:head_n]), False
        for ln in base[head_n:]:
            cells = ln.split(",") if kind != "dmon" else ln.split()
            for _ in range(self.r.randrange(3)):
                i = self.r.randrange(len(cells))
                v = self.r.choice(ABSURD + POISON_TEXT + ["N/A", "[N/A]", "t_wall", "0"])
                cells[i] = (v + " %") if kind == "query" and self.r.random() < 0.3 else v
                poisoned = True
            rows.append((", " if kind == "query" else ",").join(c.strip() for c in cells) if kind != "dmon"
                        else "  ".join(cells))
            if self.r.random() < 0.03:
                rows.append(base[0])  # a repeated header
        text = "\n".join(rows) + "\n"
        if self.r.random() < 0.1 and kind == "query":
            text = "\n".join(",".join(ln.split(",")[1:]) for ln in text.splitlines()) + "\n"  # no timestamp
        p = self.path(".csv" if kind != "dmon" else ".txt")
        p.write_bytes(self.encode(text))
        return self.command(str(p)), None, poisoned, f"samples ({kind})"

    def case_trace(self):
        doc = json.loads(json.dumps(self.trace))
        evs = doc["traceEvents"][: self.r.randrange(1, len(doc["traceEvents"]) + 1)]
        doc["traceEvents"] = evs
        poisoned = False
        for _ in range(self.r.randrange(1, 12)):
            e = self.r.choice(evs)
            key = self.r.choice(["ts", "dur", "pid", "tid", "name", "cat", "ph", "args", "args.stream",
                                 "args.device", "args.bytes", "args.correlation"])
            val = self.r.choice([2**64, -2**64, 1e308, -1, "x", None, [], {}, True, 1e20, "9876543",
                                 "\x1b[2J", {"a": {"b": {"c": 1}}}])
            if key.startswith("args."):
                if not isinstance(e.get("args"), dict):
                    e["args"] = {}
                e["args"][key[5:]] = val
            else:
                e[key] = val
            poisoned = poisoned or val in (1e308, 1e20)
        r = self.r.random()
        if r < 0.05:
            doc["traceEvents"].append({"ph": "X", "args": json.loads("[" * 200 + "]" * 200)})
        elif r < 0.10:
            doc["baseTimeNanoseconds"] = self.r.choice([2**70, -5, "x", 1e308])
        elif r < 0.14:
            doc["deviceProperties"] = [{"id": self.r.choice([2**64, "0", None]), "numSms": 2**70}]
        body = json.dumps(doc if self.r.random() < 0.9 else evs).encode()
        if self.r.random() < 0.1:
            body = body[: self.r.randrange(len(body))]  # cut short
        if self.r.random() < 0.15:
            body = gzip.compress(body)
        p = self.path(".json.gz" if body[:2] == b"\x1f\x8b" else ".json")
        p.write_bytes(body)
        return self.command(str(p)), None, False, "trace"

    def case_rundir(self):
        d = self.path("_run")
        d.mkdir()
        for name in ("timing.log", "samples.csv", "meta.json"):
            shutil.copy(RUN / name, d / name)
        meta = json.loads((d / "meta.json").read_text())
        for _ in range(self.r.randrange(0, 6)):
            k = self.r.choice(list(meta) + ["gpus"])
            meta[k] = self.r.choice([[1], "x", {"a": 1}, 1e308, -1, True, None, 2**70, "\x1b[2J", "running"])
        if isinstance(meta.get("gpus"), list) and meta["gpus"] and isinstance(meta["gpus"][0], dict):
            g = meta["gpus"][0]
            for _ in range(self.r.randrange(0, 3)):
                g[self.r.choice(list(g))] = self.r.choice(["x", [], 1e308, None, {"gen": "x"}])
        (d / "meta.json").write_text(json.dumps(meta) if self.r.random() < 0.95 else "{" * 5000)
        r = self.r.random()
        t0 = 1796168338.0
        if r < 0.3:
            rows = ["t_start,t_end,phase" if self.r.random() < 0.5 else "t_start,t_end,gpu,worker,partition,phase"]
            for i in range(self.r.randrange(1, 30)):
                rows.append(self.r.choice([f"{t0 + i},{t0 + i + 0.5},h2d", f"{t0 + i},{t0 + i - 1},x", "t_start,t_end,phase",
                                           f"{self.r.choice(ABSURD)},{t0},y", f"{t0},{t0 + 1},0,1e300,2,z"]))
            (d / "spans.csv").write_text("\n".join(rows) + "\n")
        elif r < 0.4:
            (d / "timing.log").unlink()
            self.r.choice([lambda: os.mkfifo(d / "timing.log"), lambda: (d / "timing.log").mkdir(),
                           lambda: (d / "timing.log").symlink_to("/dev/zero"),
                           lambda: (d / "timing.log").symlink_to(d / "nowhere")])()
        elif r < 0.5:
            (d / "samples.csv").write_text("\n".join(self.samples[:1] + [
                self.poison_numbers(ln) for ln in self.samples[1:30]]) + "\n")
        return self.command(str(d)), None, False, "run directory"

    def case_model(self):
        r = self.r.random()
        word = self.r.choice(CONTROLS + ["step", "x" * 300, "ok"])
        body = self.r.choice([
            f'held = "mutex_held"\n[roles]\nh2d = ["ntt_kernels"]\n[vocabulary]\nrecord = "{word.encode("unicode_escape").decode()}"\n',
            "a = " + "[" * self.r.randrange(1, 1500) + "]" * 3 + "\n",
            'held = 5\n[roles]\nh2d = "x"\n', '[roles]\nh2d = [1, 2]\n', "held = \"x\"\nroles = []\n",
            'held = "mutex_held"\n[roles]\nh2d = [[["x"]]]\n', "\x00\x01binary", "held = \"mutex_held\"\n" * 3,
        ]) if r < 0.95 else "x = 1\n" * 300000
        p = self.path(".toml")
        p.write_text(body, encoding="utf-8", errors="surrogatepass")
        return ["analyze", str(REPO / "examples" / "article_excerpt.log"), "--model", str(p)], None, False, "model"

    def case_combo(self):
        shift = self.r.choice([0, 86400 * 2, -3600 * 5, 1e9])
        rows = [self.samples[0]]
        for ln in self.samples[1:]:
            f = ln.split(",")
            f[0] = f"{float(f[0]) + shift:.3f}"
            rows.append(",".join(f))
        p = self.path(".csv")
        p.write_text("\n".join(rows) + "\n")
        return ["analyze", str(RUN), "--samples", str(p), "--json"], None, False, "--samples of another time"

    def cases(self, n: int):
        kinds = [(self.case_log, 38), (self.case_samples, 22), (self.case_trace, 20), (self.case_rundir, 10),
                 (self.case_model, 6), (self.case_combo, 4)]
        kinds.append((lambda: round4_readers(self), 8))  # issue 34, the readers and time (tools/probe_round4_readers.py)
        total = sum(w for _, w in kinds)
        for _ in range(n):
            x = self.r.uniform(0, total)
            for fn, w in kinds:
                x -= w
                if x <= 0:
                    yield fn()
                    break


def _cases(args, tmp: Path):
    """The generators' cases, mixed: (argv, stdin, poisoned, kind) tuples of Gen and
    probe_gen3.Case objects."""
    from tools.probe_gen3 import Gen3

    n_old = {"all": args.n // 2, "old": args.n, "new": 0}[args.gen]
    new = Gen3(args.seed, tmp).cases(args.n - n_old)
    old = Gen(args.seed, tmp).cases(n_old)
    yield from (c for pair in itertools.zip_longest(old, new) for c in pair if c is not None)


class _Terminal:
    """The process's own file descriptor 2 sent to a file for the whole probe: what reaches it
    (a worker process, a library writing past sys.stderr) reached the user's terminal."""

    def __init__(self, tmp: Path):
        self.f = open(tmp / "fd2.log", "w+b")  # noqa: SIM115 (open for the probe's life)
        os.dup2(self.f.fileno(), 2)
        self.seen = 0

    def new_text(self) -> str:
        self.f.seek(0, os.SEEK_END)
        end = self.f.tell()
        if end == self.seen:
            return ""
        self.f.seek(self.seen)
        self.seen = end
        return self.f.read().decode("utf-8", "replace")


def _run_case(case, terminal: _Terminal | None = None) -> tuple[list[str], str, list[str], int]:
    """(what broke the contract, kind, argv, exit code) of one case."""
    found, kind, argv, code = _run_case_inner(case)
    spoke = terminal.new_text() if terminal is not None else ""
    if spoke.strip():
        found.append(f"written to the terminal past stderr: {spoke.strip().splitlines()[0][:160]!r}")
    return found, kind, argv, code


def _run_case_inner(case) -> tuple[list[str], str, list[str], int]:
    from tools.probe_gen3_sub import run_sub

    if isinstance(case, tuple):
        argv, stdin, poisoned, kind = case
        code, out, err, secs = run_cli(argv, stdin)
        return problems(code, out, err, secs, poisoned=poisoned), kind, argv, code
    t = time.monotonic()
    if case.sub is not None:
        code, out, err, own = run_sub(case, dict(os.environ))
    else:
        code, out, err, _ = run_cli(case.argv, case.stdin)
        own = []
    secs = time.monotonic() - t
    found = problems(code, out, err, secs, poisoned=case.poisoned)
    if case.sub is not None:  # their own exit codes are checked by run_sub (128+N, 130; 6 for a full disk)
        found = [f for f in found if not f.startswith("exit ") and not f.startswith("slow")]
    return found + own + case.after(code), case.kind, case.argv, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds; stop generating after it")
    ap.add_argument("--keep", action="store_true", help="keep the inputs that found something")
    ap.add_argument("--gen", choices=["all", "old", "new"], default="all",
                    help="old: the first generators; new: round three's (tools/probe_gen3.py); all: both")
    args = ap.parse_args()
    os.environ.setdefault("GPUSCOPE_FIFO_WAIT", "0.2")
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="probe-cache-"))
    tmp = Path(tempfile.mkdtemp(prefix="probe-hostile-"))
    found: dict[str, list[str]] = collections.defaultdict(list)
    by_kind: collections.Counter[str] = collections.Counter()
    codes: collections.Counter[int] = collections.Counter()
    t0 = time.monotonic()
    ran = 0
    terminal = _Terminal(tmp)
    try:
        for case in _cases(args, tmp):
            if time.monotonic() - t0 > args.budget:
                break
            found_here, kind, argv, code = _run_case(case, terminal)
            ran += 1
            by_kind[kind] += 1
            codes[code] += 1
            for p in found_here:
                key = f"{kind}: {p.split(':')[0]}"
                found[key].append(f"{' '.join(argv)} -> {p}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ran {ran} inputs in {time.monotonic() - t0:.0f} s ({', '.join(f'{k} {v}' for k, v in by_kind.most_common())});"
          f" exit codes {dict(sorted(codes.items()))}; peak RSS {rss:.0f} MiB")
    for key, items in sorted(found.items()):
        print(f"FOUND {key}: {len(items)} input(s), e.g. {items[0][:400]}")
    print(f"{sum(len(v) for v in found.values())} finding(s) in {len(found)} class(es)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
