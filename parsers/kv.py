"""The article's condensed form and the generic `key=value` timing format.

    mutex_wait_ms=1149 | barrier_wait_ms=0
    ntt_kernels=287ms | msm=634ms | batch_add=401 | tail_msm=198
    mutex_held_ms=1634 | total_fn=4215ms

Fields are separated by `|`, commas or whitespace. A value's unit comes from its suffix
(`ms`, `s`, `us`, `ns`) or else from the key's suffix (`_ms`, `_s`, `_us`, `_ns`); a bare
number is milliseconds. The component name drops the key's unit suffix. In the generic
format a non-numeric value of a key without a time unit is a label and ignored
(`job=abc`); in the condensed form every field is a time, so it is damage.

Records: a record ends at a line carrying the held key; lines after the last held line
form an incomplete record. With no held key anywhere in the log, each line is a record.
"""

from __future__ import annotations

from parsers.fields import kv_tokens, split_key_unit, value_with_unit


def read_kv(text: str, strict: bool, held: str = ""):
    """Line text -> (names, values_ms), None (no timing fields), or a reason string."""
    names: list[str] = []
    values: list[float] = []
    for t in kv_tokens(text):
        k, eq, v = t.partition("=")
        if not eq:
            continue  # prefix words, labels without '='
        if not k or not k.replace("_", "a").replace(".", "a").replace("-", "a").isalnum():
            if strict:
                return f"unreadable field {t[:40]!r}"
            continue
        name, key_factor = split_key_unit(k)
        x, val_factor = value_with_unit(v)
        if x is None:
            if strict or key_factor is not None or val_factor is not None or name == held:
                return f"{k[:30]}: value {v[:20]!r} is not a number"
            continue
        factor = val_factor if val_factor is not None else (key_factor or 1.0)
        names.append(name)
        values.append(x * factor)
    if not names:
        return None
    return names, values
