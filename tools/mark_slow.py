"""Write tests/slow_tests.txt from a pytest `--durations=0` log: the tests `make check` leaves to
`make test` (tests/conftest.py marks them `slow`).

    .venv/bin/python -m pytest -q -p no:cacheprovider --durations=0 > /tmp/durations.log
    .venv/bin/python tools/mark_slow.py /tmp/durations.log

A file whose tests take FILE_S seconds or more together is listed whole (its module-scoped
fixtures would otherwise fall on whichever of its tests ran first); in the other files, each test
of TEST_S seconds or more (setup, call and teardown) is listed by its node id. ALWAYS_FAST files
stay in `make check` whatever they take: the rules a change most often breaks.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

FILE_S = 3.0
TEST_S = 0.3
LINE = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(tests/\S+?\.py)(::\S+)?\s*$")
#: in `make check` whatever they take: the layers, the module and function sizes (test_layers:
#: ~3 CPU-s; c28f77c took a function to 81 lines that only `make test` caught) and the imports
#: inside functions (test_local_imports: ~2 CPU-s; 9bee1f5 went one over a ceiling make check missed)
ALWAYS_FAST = frozenset({"tests/test_layers.py", "tests/test_local_imports.py"})
OUT = Path(__file__).resolve().parents[1] / "tests" / "slow_tests.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", type=Path, help="the output of pytest --durations=0")
    ap.add_argument("--file-s", type=float, default=FILE_S)
    ap.add_argument("--test-s", type=float, default=TEST_S)
    args = ap.parse_args()
    per_test: collections.Counter[str] = collections.Counter()
    per_file: collections.Counter[str] = collections.Counter()
    for line in args.log.read_text(encoding="utf-8", errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            per_file[m.group(2)] += float(m.group(1))
            per_test[m.group(2) + (m.group(3) or "")] += float(m.group(1))
    files = sorted(f for f, s in per_file.items() if s >= args.file_s and f not in ALWAYS_FAST)
    tests = sorted(t for t, s in per_test.items() if s >= args.test_s and t.split("::")[0] not in files
                   and t.split("::")[0] not in ALWAYS_FAST)
    OUT.write_text("# tests `make check` leaves to `make test` (tools/mark_slow.py wrote this from a durations log)\n"
                   + "".join(f"{x}\n" for x in files + tests), encoding="utf-8")
    print(f"{OUT}: {len(files)} files, {len(tests)} tests")


if __name__ == "__main__":
    main()
