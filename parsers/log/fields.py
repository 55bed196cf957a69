"""Reading `key=value` fields and numbers with time units. Plain string operations only:
no regular expression here can backtrack, whatever the input. Numbers are read by
parsers.numbers.number (ASCII numerals only; re-exported here as `number`)."""

from __future__ import annotations

from gpuscope.parsers.numbers import number

__all__ = ["number", "split_key_unit", "value_with_unit", "kv_tokens", "first_repeat", "repeated"]

# value suffix -> factor to milliseconds (longest first so "ms" wins over "s")
VALUE_UNITS = (("ms", 1.0), ("us", 1e-3), ("\u00b5s", 1e-3), ("ns", 1e-6), ("s", 1000.0))
# key suffix -> factor to milliseconds
KEY_UNITS = (("_ms", 1.0), ("_us", 1e-3), ("_ns", 1e-6), ("_s", 1000.0))


def split_key_unit(key: str) -> tuple[str, float | None]:
    """`mutex_held_ms` -> ("mutex_held", 1.0); `synth_s` -> ("synth", 1000.0); `msm` -> ("msm", None)."""
    for suffix, factor in KEY_UNITS:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], factor
    return key, None


def value_with_unit(text: str) -> tuple[float | None, float | None]:
    """`287ms` -> (287.0, 1.0); `1.5s` -> (1.5, 1000.0); `12` -> (12.0, None); junk -> (None, ?)."""
    x = number(text)
    if x is not None:
        return x, None
    for suffix, factor in VALUE_UNITS:
        if text.endswith(suffix):
            return number(text[: -len(suffix)]), factor
    return None, None


def kv_tokens(text: str) -> list[str]:
    """Fields separated by `|`, commas or whitespace."""
    if "|" in text:
        text = text.replace("|", " ")
    if "," in text:
        text = text.replace(",", " ")
    return text.split()


def first_repeat(names: list[str]) -> str | None:
    """The first name printed twice in one line's list, or None (the usual case: no set built)."""
    if len(names) < 2:
        return None
    if len(set(names)) == len(names):
        return None
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return n
        seen.add(n)
    return None


def repeated(name: str) -> str:
    """The damage reason of a line that prints one key twice: which of its values is the
    one meant cannot be known, so the line is not read (docs/ARCHITECTURE.md)."""
    return f"{name[:30]}: printed twice in one line"
