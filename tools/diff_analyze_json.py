"""Diff two dumps of tools/dump_analyze_json.sh: per input, the JSON paths that differ.

    python3 tools/diff_analyze_json.py /tmp/analysis_before /tmp/analysis_after [--additive]

--additive also lists keys only in the second dump (new keys); by default those are counted only.
"""
import json
import sys
from pathlib import Path


def walk(a, b, path, out, adds):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                out.append((f"{path}.{k}", "removed", _short(a[k])))
            else:
                walk(a[k], b[k], f"{path}.{k}", out, adds)
        for k in b:
            if k not in a:
                adds.append(f"{path}.{k}")
    elif (isinstance(a, list) and isinstance(b, list) and path.endswith("diagnoses")
          and all(isinstance(x, dict) and "id" in x for x in a + b)):
        ia, ib = [x["id"] for x in a], [x["id"] for x in b]
        if ia != ib:
            out.append((path, "order/ids", f"{ia} -> {ib}"))
        bb = {x["id"]: x for x in b}
        for x in a:
            if x["id"] in bb:
                walk(x, bb[x["id"]], f"{path}[{x['id']}]", out, adds)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, f"len {len(a)} -> {len(b)}", _short([x.get('id') if isinstance(x, dict) else x for x in a]) + " -> " + _short([x.get('id') if isinstance(x, dict) else x for x in b])))
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            walk(x, y, f"{path}[{i}]", out, adds)
    elif a != b:
        if isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-12 * max(1, abs(a)):
            return
        out.append((path, _short(a), _short(b)))


def _short(x):
    s = json.dumps(x)
    return s if len(s) < 160 else s[:157] + "..."


def main():
    before, after = Path(sys.argv[1]), Path(sys.argv[2])
    show_adds = "--additive" in sys.argv
    for f in sorted(before.glob("*.json")):
        g = after / f.name
        try:
            a = json.loads(f.read_text() or "null")
            b = json.loads(g.read_text() or "null") if g.exists() else None
        except json.JSONDecodeError as e:
            print(f"== {f.name}: unreadable {e}")
            continue
        out, adds = [], []
        walk(a, b, "", out, adds)
        if out or (adds and show_adds):
            print(f"== {f.stem}: {len(out)} changed, {len(adds)} added")
            for p, x, y in out:
                print(f"   {p}: {x} -> {y}")
            if show_adds:
                for p in adds:
                    print(f"   + {p}")


if __name__ == "__main__":
    main()
