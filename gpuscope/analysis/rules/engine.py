"""One rule signature over the evidence, one decorator that registers it, one ranking.

    @rule("h2d_bound", needs=LOG, uses=("copies",), emits={"h2d_bound": "upload"})
    def h2d_bound(ev: Evidence) -> list[Finding]: ...

    findings = run_rules(evidence)     # rules.registry: every rule, ranked once

A rule is `rule(ev: Evidence) -> list[Finding]`, a Finding `(Diagnosis, share)`: share = the share of
the time the finding explains (0-1), the second ranking key. Every figure it reads is computed in
gpuscope.analysis.evidence. The decorator states:
- `id`: the rule's name (docs/ANALYZE.md names every one);
- `needs`: the sources the rule reads (log, samples, trace): it runs only where all are present;
- `uses`: the evidence kinds it reads (compute, copies, host, device, idle): every finding names
  the pieces it used under `evidence["pieces"]`, with their source and resolution;
- `emits`: every finding id it can emit and the cause each names (one vocabulary for every source:
  a trace's `pageable_memcpy`, a capture's `download_bound_pageable` and a log's `d2h_bound` all name
  `readback`; None: a note on how the input was read, a pause, the start-up; `unknown`: the source
  cannot tell); `cause`: where the cause depends on the finding's evidence, the rule's own function;
- `supersedes`: ids of findings this rule's finding replaces when it fires (the same time, told
  by finer evidence: the log's own bytes/time over the samples' RX);
- `yields_to`: sources that, when present, make this rule stand down (a trace measures every
  copy and kernel the samples only average);
- `also`: sources it reads where present, not required (the samples joined to a log's phases);
- `ranks_after`: sources whose findings of the same severity rank before this rule's: a GPU the
  samples see starved is the stall the timing lines name part by part (cpu_stall_at_barrier:
  data), and the finding that names the part comes first.
The engine tags each finding with its cause and its part (the rule's first source).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpuscope.allocator import give_back
from gpuscope.analysis.core import SEVERITY_ORDER, Diagnosis
from gpuscope.analysis.rules.guessed import cap_guessed

if TYPE_CHECKING:
    from types import ModuleType

    from gpuscope.analysis.evidence import Evidence

Finding = tuple[Diagnosis, float]
RuleFn = Callable[["Evidence"], list[Finding]]
LOG, TRACE, SAMPLES = ("log",), ("trace",), ("samples",)


@dataclass(frozen=True)
class Rule:
    id: str
    needs: tuple[str, ...]
    uses: tuple[str, ...]
    run: RuleFn
    emits: Mapping[str, str | None]    # finding id -> the cause it names (None: names none)
    cause: Callable[[Diagnosis], str | None] | None = None  # the cause where it depends on the evidence
    supersedes: tuple[str, ...] = ()
    yields_to: tuple[str, ...] = ()
    also: tuple[str, ...] = ()      # sources it reads too where present (the samples beside a log)
    ranks_after: tuple[str, ...] = ()  # sources whose findings of its severity go first (they name the part)

    def applies(self, ev: Evidence) -> bool:
        have = ev.sources
        return all(n in have for n in self.needs) and not any(y in have for y in self.yields_to)

    def cause_of(self, d: Diagnosis) -> str | None:
        """The cause finding `d` names: none where `emits` says none (a note), else the rule's own
        function where it has one, else `emits`."""
        named = self.emits.get(d.id)
        return None if named is None else self.cause(d) if self.cause is not None else named


#: the rules each module declared, in the order it declared them (rules_of reads them)
_DECLARED: dict[str, list[Rule]] = {}


def rule(id: str, *, needs: tuple[str, ...], uses: tuple[str, ...], emits: Mapping[str, str | None],
         cause: Callable[[Diagnosis], str | None] | None = None, supersedes: tuple[str, ...] = (),
         yields_to: tuple[str, ...] = (), also: tuple[str, ...] = (),
         ranks_after: tuple[str, ...] = ()) -> Callable[[RuleFn], RuleFn]:
    """Register `fn(ev) -> [Finding]` as a rule of its module (module docstring: the arguments)."""
    def register(fn: RuleFn) -> RuleFn:
        _DECLARED.setdefault(fn.__module__, []).append(
            Rule(id, needs, uses, fn, dict(emits), cause, supersedes, yields_to, also, ranks_after))
        return fn
    return register


def rules_of(*modules: ModuleType) -> list[Rule]:
    """The rules the modules declared, module by module, each in its declaration order."""
    return [r for m in modules for r in _DECLARED.get(m.__name__, [])]


LOG_SHARE_KEYS = ("h2d_share_of_run", "h2d_share", "d2h_share", "stall_share")


def log_findings(ds: list[Diagnosis]) -> list[Finding]:
    """A log rule's diagnoses with their share: the part of the record time the finding is about."""
    def share(d: Diagnosis) -> float:
        for k in LOG_SHARE_KEYS:
            v = d.evidence.get(k)
            if isinstance(v, int | float) and v == v:
                return float(v)
        return 0.0
    return [(d, share(d)) for d in ds]


def span_findings(ds: list[Diagnosis]) -> list[Finding]:
    """A trace rule's diagnoses with their share: the time at stake over the traced span."""
    return [(d, float(d.evidence.get("share_of_span") or 0.0)) for d in ds]


NEAR_LINE = 0.8  # a copy share at this share of the line rate or more runs as fast as the link allows


def link_when_near_line(otherwise: str) -> Callable[[Diagnosis], str | None]:
    """A cause function: read-backs or uploads that ran at NEAR_LINE of the line rate or faster are
    bound by the link (what the capture and the trace of the same copies call `link_bound`), unless
    the evidence shows them run in turn with a GPU compute at least as long
    (`copies_could_hide_under_compute`: a log's printed whole holding both): then, as a trace of the
    same copies says (copies_not_overlapped), they are serialised, and overlapping them is what is
    left to win. Others name `otherwise`."""
    def cause(d: Diagnosis) -> str | None:
        shares = [v for k, v in d.evidence.items() if k.endswith("share_of_line_rate") and isinstance(v, int | float)]
        if not (shares and max(shares) >= NEAR_LINE):
            return otherwise
        return "copies_serialised" if d.evidence.get("copies_could_hide_under_compute") is True else "link"
    return cause


def _source_of(piece_source: str) -> str:
    return {"gpm": "samples", "utilization": "samples"}.get(piece_source, piece_source)


def pieces_used(rule: Rule, ev: Evidence, d: Diagnosis) -> list[str]:
    """The labels of the pieces a finding used: of the rule's kinds, from its sources, on its GPU(s)."""
    gpus = d.evidence.get("gpus") if isinstance(d.evidence.get("gpus"), list) else None
    if gpus is None and isinstance(d.evidence.get("gpu"), int):
        gpus = [d.evidence["gpu"]]
    out = []
    for p in ev.pieces:
        if p.kind not in rule.uses or _source_of(p.source) not in (*rule.needs, *rule.also):
            continue
        if gpus is not None and p.gpu is not None and p.gpu not in gpus:
            continue
        out.append(p.label)
    return out


def rank(rules: list[Rule], ev: Evidence) -> list[Diagnosis]:
    """Every applicable rule's findings, superseded ones dropped, ranked once: severity, then the
    share of the time explained (ties keep the rules' order)."""
    found: list[tuple[Rule, Diagnosis, float]] = []
    for r in rules:
        if not r.applies(ev):
            continue
        for d, share in r.run(ev):
            assert d.id in r.emits, f"rule {r.id} emitted {d.id}, not in its emits"
            found.append((r, d, share))
        if "trace" in r.needs:
            # (a trace rule's freed arrays given back before the next rule's are made: at 10M
            # kernels each one's transient stacked on the last ones' leavings, +290 MB in all)
            give_back()
    gone = {s for r, _, _ in found for s in r.supersedes}
    kept = [(r, d, s) for r, d, s in found if d.id not in gone]
    out = []
    for r, d, s in kept:
        used = pieces_used(r, ev, d)
        if used:
            d = replace(d, evidence={**d.evidence, "pieces": used})
        d = cap_guessed(d, ev, used)  # (at most LOW on a role guessed from an ambiguous name)
        out.append((r, replace(d, cause=r.cause_of(d), part=r.needs[0] if r.needs else None), s))
    out.sort(key=lambda x: (SEVERITY_ORDER.get(x[1].severity, 9), -_num(x[2])))
    return [d for _, d, _ in _after(out)]


def _after(ranked: list[tuple[Rule, Diagnosis, float]]) -> list[tuple[Rule, Diagnosis, float]]:
    """Each finding of a rule with `ranks_after` moved behind the findings of its severity from those sources."""
    out = list(ranked)
    for item in [x for x in ranked if x[0].ranks_after]:
        r, d, _ = item
        later = [i for i, (o, od, _) in enumerate(out)
                 if od.severity == d.severity and any(n in r.ranks_after for n in o.needs)]
        i = out.index(item)
        if later and later[-1] > i:
            out.insert(later[-1], out.pop(i))
    return out


def _num(x: float | None) -> float:
    return float(x) if isinstance(x, int | float) and x == x else 0.0
