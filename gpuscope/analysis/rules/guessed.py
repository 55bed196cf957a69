"""One cap for every finding that rests only on a role guessed from an ambiguous name (issue 33).

A log of any program gets its roles guessed from its component names (gpuscope/rolemodel.py).
Some words say what ran; others could mean either of two things with opposite cures: `load`
(a batch the GPU waits for, or a model's one-off load), `put` (JAX's device_put, an upload,
or a queue's put), `read` (a file read, or a read-back), `fetch`, `get`, `decode` (an image
decoded on the host, or an LLM's decode phase on the GPU). A HIGH or MEDIUM
finding whose components all got their role from such a word, in a guessed model, with no
piece of another source (samples, a trace) beside it, is capped at LOW and says it is a
guess and what would lift it: `--model FILE.toml`, a known format (the CuZK model), or a
trace or samples that agree. (`wait` and `queue` alone get no role at all.)

False fire, and the test that shows it does not (tests/test_guessed_cap.py): a `data_ms` stall
(an unambiguous word) keeps its severity; a `load_ms` stall under `--model` keeps it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gpuscope.analysis.core import Diagnosis

#: words that name work of two kinds with opposite cures: a role guessed from one is a guess
AMBIGUOUS_WORDS = frozenset(("load", "loads", "loading", "put", "read", "fetch", "get", "wait", "queue", "decode"))
_GUESSED = re.compile(r"guessed from name '([^']+)'")
CAPPED = ("high", "medium")


def _components(evidence: dict[str, Any]) -> list[str]:
    """The components a finding names as its ground: `*_components` lists and a `component`."""
    out: list[str] = []
    for k, v in evidence.items():
        if k.endswith("_components") and isinstance(v, list):
            out += [str(x) for x in v]
    if isinstance(evidence.get("component"), str):
        out.append(evidence["component"])
    return out


def ambiguous_ground(model, names: list[str]) -> dict[str, str]:
    """{component: the ambiguous word its role was guessed from}, when every one of `names`
    got its role so in a guessed model; else {}."""
    if model is None or getattr(model, "name", "") != "guessed" or not names:
        return {}
    out: dict[str, str] = {}
    for n in names:
        m = _GUESSED.match(model.how.get(n, ""))
        if m is None or m.group(1) not in AMBIGUOUS_WORDS:
            return {}
        out[n] = m.group(1)
    return out


def cap_guessed(d: Diagnosis, ev, used: list[str]) -> Diagnosis:
    """`d` at most LOW when it rests only on roles guessed from ambiguous names (see above)."""
    if d.severity not in CAPPED or ev.log is None:
        return d
    ground = ambiguous_ground(getattr(ev.log, "model", None), _components(d.evidence))
    if not ground:
        return d
    others = {p.source for p in ev.pieces if p.label in used and p.source != "log"}
    if others:
        return d  # other evidence (samples, a trace) agrees
    words = ", ".join(f"{c} from '{w}'" for c, w in ground.items())
    note = (f" A guess: it rests only on a role guessed from an ambiguous name ({words}); --model FILE.toml, "
            "or a trace or samples that show the same, would lift it.")
    return replace(d, severity="low", summary=d.summary + note,
                   evidence={**d.evidence, "guessed_from": ground, "severity_uncapped": d.severity})
