"""The times of a line that no key names (parsers/log/lines/fields.py Line inherits them): a time
per step without a label (`2.10s/it`, `0.31 sec/step`, `2.84 s / it`), and a time with a unit
after the record's counter (`step 1: 125.8 ms`, `step 1 | loss 1.990 | 12.6 ms`, `Epoch 3:
0.89 sec`; issue 33, class 2). A bare number without a unit stays nothing."""

from __future__ import annotations

from typing import Any

from gpuscope.parsers.log.lines.plan import UNCACHEABLE
from gpuscope.parsers.log.lines.vocabulary import (
    BARE,
    COLON,
    FILLERS,
    FRAC,
    LABEL,
    STEP_WORDS,
    UNIT,
    UNIT_WORDS,
    WEAK_FILLERS,
    parse_value,
)
from gpuscope.parsers.log.words import COUNTER, PLAIN, TIMEK, key_class


class KeylessTimes:
    """Methods of Line (parsers/log/lines/fields.py) for times that no key names."""

    toks: list[str]
    n: int
    i: int
    lead: str | None
    lead_named: bool
    keyless_done: bool
    note: Any
    time: Any
    names: list[str]

    def per_step(self, token: str, next_at: int) -> None:
        """`2.10s/it`, `35ms/step`, `0.31 sec/step`, `120.4 ms/it`: the time of one step."""
        unit_tok = token
        if "/" not in token and next_at < self.n and "/" in self.toks[next_at]:
            unit_tok = token + self.toks[next_at]
        toks, n = self.toks, self.n
        if "/" not in unit_tok and next_at + 1 < n and toks[next_at].lower() in UNIT_WORDS and toks[next_at + 1][:1] == "/":
            # `2.84 s / it`, `0.5 s /it`: a time per step, spaced out
            per = toks[next_at + 1][1:] or (toks[next_at + 2] if next_at + 2 < n else "")
            if per.rstrip(".:").lower() in STEP_WORDS:
                self.i += 1 if toks[next_at + 1][1:] else 2
                unit_tok = token + toks[next_at] + "/" + per
        head, sl, per = unit_tok.partition("/")
        if not sl or per.rstrip(".:").lower() not in STEP_WORDS:
            self.note(("value", next_at - 1, ""))  # (a number that decides nothing: `(0.138)`, `12/500`)
            self.keyless(token, next_at)
            return
        x, vf, kind, num = parse_value(head)
        if kind != UNIT or vf is None:
            return
        if unit_tok != token:
            self.i += 1
        self.note(("value", next_at - 1, ""))
        self.time(f"time_per_{per.rstrip('.:').lower()}", x, vf, num, next_at - 1, "", len(token) - len(num), False, token)

    def keyless(self, token: str, next_at: int) -> None:
        """A time with a unit but no key after the record's counter (`step 1: 125.8 ms`,
        `Epoch 3: 0.89 sec`, `step 1 | loss 1.990 | 12.6 ms`, `prove 0: 3s913ms699.706us`):
        the time of that record, named `<counter>_time`. Only the first such time of a line,
        and only after a counter: a bare number stays nothing (a refusal beats a misread)."""
        if self.lead is None or self.keyless_done:
            return
        x, vf, kind, num = parse_value(token)
        unit_word = kind == BARE and next_at < self.n and self.toks[next_at].rstrip(".:").lower() in UNIT_WORDS
        if unit_word:
            vf, kind = UNIT_WORDS[self.toks[next_at].rstrip(".:").lower()], UNIT
        if kind != UNIT or vf is None:
            return
        if next_at + int(unit_word) < self.n and self.toks[next_at + int(unit_word)].lower() == "per":
            return  # `25.38 ms per token`: a rate
        self.keyless_done = True
        if unit_word:
            self.i += 1
        if not token.startswith(num) or self.lead_named:
            self.note(UNCACHEABLE)  # (a duration in several units, a name holding a number: no replay)
        name = self.lead if self.lead_named else f"{self.lead.lower()}_time"
        self.time(name, x, vf, num, next_at - 1, "", len(token) - len(num), False, token)

    def placed(self, key: str, value: str, shape: int, kind: int, cls: int, num: str, printed_low: str) -> bool:
        """False for a value in several units that is no duration here; notes the record's counter."""
        if kind == BARE and printed_low in WEAK_FILLERS and key == "took":
            return False  # `11737 of 20000`, `In 1 gpu`, `is: 1000 MHz`: prose, a bare number is no time
        if kind == UNIT and not value.startswith(num):
            self.note(UNCACHEABLE)  # (`9m26.21s`, `0:00:10.736`: a duration in several units)
            if ":" in value and cls != TIMEK and printed_low not in FILLERS:
                return False  # `H:MM:SS` under a key that says no time (`eta: 1 day, 3:36:30`): a clock, a forecast
        if self.lead is None and shape in (LABEL, COLON) and not self.names and kind in (BARE, FRAC) and "." not in num:
            if cls == COUNTER or key_class(printed_low) == COUNTER:  # (`completed step: 0`: its last word)
                self.lead = key if cls == COUNTER else printed_low  # `step 1:`, `Epoch 3`, `step 1/30:`
            elif cls == PLAIN and kind == BARE and value.endswith(":") and "_" in key:
                # `preCommit phase 1: 3h51m36.3s` (lotus-bench): the number is part of the label
                self.lead, self.lead_named = f"{key}_{num}", True
        return True
