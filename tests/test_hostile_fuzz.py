"""Property-based hostile input (issue 22): every reader and every output, through the CLI,
keeps the contract of tests/hostile_check.py (documented exit codes, one prefixed line per
message, no raw control character, no poisoned value read as a number, bounded time).

Profiles: `short` in `make test` (a few dozen examples per property), `long` in `make fuzz`
(GPUSCOPE_FUZZ=long: thousands). tools/probe_hostile.py is the generator-driven counterpart."""

from __future__ import annotations

import gzip
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope.parsers import numbers
from gpuscope.parsers.log import cuzk, kv
from gpuscope.parsers.log.lines import read as lines

from .conftest import DATA, EXAMPLES
from .hostile_check import POISON_TEXT, problems, run_cli

settings.register_profile("short", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
PROFILE = os.environ.get("GPUSCOPE_FUZZ", "short")
RUN = DATA / "h200_bounds" / "runs" / "hbm_bound"
# the log formats read numbers through parsers.numbers once the parsers' side of issue 22 is in
LOGS_USE_NUMBERS = any(getattr(m, "numbers", None) is numbers for m in (kv, lines, cuzk))

PIECES = ["step_ms=", "data_time=", "h2d_ms=", "total=", "ms", "s", " ", "=", ":", "\n", "\r\n", "\t",
          "CUZK_TIMING: ", "mutex_held_ms=", "[epoch 0] step 3/9 ", "Time ", "Data ", "12", "0.5", "3e2",
          "\x1b[2J", "\x9b31m", "\u202e", "\x00", "\ufeff", "[red]", "$x$", *POISON_TEXT]
text_st = st.lists(st.sampled_from(PIECES), min_size=1, max_size=60).map("".join)
ABSURD = st.sampled_from(["1e308", "1e20", "99999999999999999999", "-1", "nan", "inf", "", "N/A", "0x1f", "4_5",
                          "\u0664\u0665", "\uff14\uff15", "12..", "t_wall", "1e-400", *POISON_TEXT])


def _check(argv, stdin=None, poisoned=False):
    code, out, err, secs = run_cli([str(a) for a in argv], stdin)
    assert not problems(code, out, err, secs, poisoned=poisoned), (argv, code, err[-400:])
    return code, out


@settings(settings.get_profile(PROFILE))
@given(text=text_st, gz=st.booleans(), stdin=st.booleans(), bom=st.sampled_from([b"", b"\xef\xbb\xbf"]))
def test_any_log_text(tmp_path_factory, text, gz, stdin, bom):
    data = bom + text.encode("utf-8", "surrogatepass")
    data = gzip.compress(data) if gz else data
    if stdin:
        _check(["analyze", "-", "--json"], data, poisoned=LOGS_USE_NUMBERS)
        return
    p = tmp_path_factory.mktemp("log") / ("x.log.gz" if gz else "x.log")
    p.write_bytes(data)
    _check(["analyze", p, "--json"], poisoned=LOGS_USE_NUMBERS)
    _check(["analyze", p, "-v", "--records"])


@st.composite
def samples_file(draw):
    kind = draw(st.sampled_from(["csv", "query"]))
    src = RUN / "samples.csv" if kind == "csv" else DATA / "h200_bounds" / "smi" / "hbm_bound_query.csv"
    rows = src.read_text().splitlines()[:40]
    out = [rows[0]]
    for ln in rows[1:]:
        cells = ln.split(",")
        for _ in range(draw(st.integers(0, 2))):
            cells[draw(st.integers(0, len(cells) - 1))] = draw(ABSURD) + draw(st.sampled_from(["", " %", " W"]))
        out.append(",".join(cells))
    return kind, "\n".join(out) + "\n"


@settings(settings.get_profile(PROFILE))
@given(f=samples_file())
def test_any_samples_file(tmp_path_factory, f):
    kind, text = f
    p = tmp_path_factory.mktemp("s") / "s.csv"
    p.write_text(text)
    _check(["analyze", p, "--json"], poisoned=True)


EVENT_KEYS = st.sampled_from(["ts", "dur", "pid", "tid", "name", "cat", "ph", "args"])
VALUES = st.one_of(st.sampled_from([2**64, -2**64, 1e308, -1, True, None, 1e20, "x", "\x1b[2J"]),
                   st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                   st.recursive(st.none() | st.integers(), lambda c: st.lists(c, max_size=2)
                                | st.dictionaries(st.text(max_size=3), c, max_size=2), max_leaves=8))


@settings(settings.get_profile(PROFILE))
@given(edits=st.lists(st.tuples(st.integers(0, 59), EVENT_KEYS, VALUES), max_size=8), cut=st.booleans())
def test_any_trace(tmp_path_factory, edits, cut):
    doc = json.loads(gzip.decompress((DATA / "h200_bounds" / "traces" / "hbm_bound.json.gz").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "X"][:60]
    for i, k, v in edits:
        doc["traceEvents"][i][k] = v
    body = json.dumps(doc).encode()
    if cut:
        body = body[: len(body) * 2 // 3]
    p = tmp_path_factory.mktemp("t") / "t.json"
    p.write_bytes(body)
    code, out = _check(["analyze", p, "--json"])
    if code == 0:
        assert "e+30" not in out


MODEL_ST = st.recursive(st.text(max_size=4) | st.integers() | st.booleans(),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(
                            st.sampled_from(["held", "roles", "h2d", "vocabulary", "record", "contains", "x\x1b"]),
                            c, max_size=3), max_leaves=12)


@settings(settings.get_profile(PROFILE))
@given(doc=st.dictionaries(st.sampled_from(["held", "roles", "vocabulary", "name", "contains"]), MODEL_ST, max_size=4))
def test_any_role_model(tmp_path_factory, doc):
    import tomllib  # noqa: F401 (the loader's reader)

    def toml(v, key=""):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {toml(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(toml(x) for x in v) + "]"
        return "true" if v is True else "false" if v is False else json.dumps(v)

    p = tmp_path_factory.mktemp("m") / "m.toml"
    p.write_text("".join(f"{json.dumps(k)} = {toml(v)}\n" for k, v in doc.items()))
    _check(["analyze", EXAMPLES / "article_excerpt.log", "--model", p])


OUTPUTS = [("--json",), ("--records", "-v"), ("--csv", "{d}/csv"), ("--html", "{d}/r.html"), ("plot", "-o", "{d}/p.png"),
           ("export", "--perfetto", "{d}/t.json")]


@pytest.mark.parametrize("out", OUTPUTS, ids=lambda o: o[0].lstrip("-"))
@settings(settings.get_profile(PROFILE), max_examples=min(settings.get_profile(PROFILE).max_examples, 6))
@given(name=st.lists(st.sampled_from(["\x1b]8;;http://e.x/\x1b\\", "\x9b2J", "\u202e", "[red]", "$x^2$", "a"]),
                     min_size=1, max_size=4).map("".join))
def test_every_output_of_hostile_names(tmp_path_factory, out, name):
    d = tmp_path_factory.mktemp("o")
    log = d / "x.log"
    log.write_text("".join(f"2026-12-01T10:00:0{i}.000Z k{name}_ms=1{i} step_ms=2{i}\n" for i in range(6)))
    args = [a.format(d=d) for a in out]
    argv = [args[0], log, *args[1:]] if args[0] in ("plot", "export") else ["analyze", log, *args]
    _check(argv)
    for f in d.rglob("*"):
        if f.suffix in (".html", ".csv", ".json"):
            text = f.read_text(encoding="utf-8")
            assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text, f


def test_the_profile_is_known():
    assert PROFILE in ("short", "long"), f"GPUSCOPE_FUZZ={PROFILE}: use short or long"
    assert sys.version_info >= (3, 11)
