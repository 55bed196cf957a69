"""One rule type over the evidence, and one ranking.

    Rule(id, needs, uses, run, supersedes=(), yields_to=())
    findings = run_rules(RULES, evidence)     # ranked: severity, then share of the time explained

- `needs`: the sources the rule reads (log, samples, trace): it runs only where all are present.
- `uses`: the evidence kinds it reads (compute, copies, host, device, idle): every finding names
  the pieces it used under `evidence["pieces"]`, with their source and resolution.
- `run(evidence) -> [(Diagnosis, share)]`: share = the share of the time the finding explains
  (0-1), the second ranking key.
- `supersedes`: ids of findings this rule's finding replaces when it fires (the same time, told
  by finer evidence: the log's own bytes/time over the samples' RX).
- `yields_to`: sources that, when present, make this rule stand down (a trace measures every
  copy and kernel the samples only average).
- `also`: sources it reads where present, not required (the samples joined to a log's phases).
- `ranks_after`: sources whose findings of the same severity rank before this rule's: a GPU the
  samples see starved is the stall the timing lines name part by part (cpu_stall_at_barrier:
  data), and the finding that names the part comes first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpuscope.analysis.causes import cause_of
from gpuscope.analysis.core import SEVERITY_ORDER, Diagnosis
from gpuscope.analysis.rules.guessed import cap_guessed

if TYPE_CHECKING:
    from gpuscope.analysis.evidence import Evidence

Finding = tuple[Diagnosis, float]


@dataclass(frozen=True)
class Rule:
    id: str
    needs: tuple[str, ...]
    uses: tuple[str, ...]
    run: Callable[[Evidence], list[Finding]]
    supersedes: tuple[str, ...] = ()
    yields_to: tuple[str, ...] = ()
    also: tuple[str, ...] = ()      # sources it reads too where present (the samples beside a log)
    ranks_after: tuple[str, ...] = ()  # sources whose findings of its severity go first (they name the part)

    def applies(self, ev: Evidence) -> bool:
        have = ev.sources
        return all(n in have for n in self.needs) and not any(y in have for y in self.yields_to)


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


def run_rules(rules: list[Rule], ev: Evidence) -> list[Diagnosis]:
    """Every applicable rule's findings, superseded ones dropped, ranked once: severity, then the
    share of the time explained (ties keep the rules' order)."""
    found: list[tuple[Rule, Diagnosis, float]] = []
    for rule in rules:
        if not rule.applies(ev):
            continue
        for d, share in rule.run(ev):
            found.append((rule, d, share))
    gone = {s for r, _, _ in found for s in r.supersedes}
    kept = [(r, d, s) for r, d, s in found if d.id not in gone]
    out = []
    for r, d, s in kept:
        used = pieces_used(r, ev, d)
        if used:
            d = replace(d, evidence={**d.evidence, "pieces": used})
        d = cap_guessed(d, ev, used)  # (at most LOW on a role guessed from an ambiguous name)
        out.append((r, replace(d, cause=cause_of(d), part=r.needs[0] if r.needs else None), s))
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
