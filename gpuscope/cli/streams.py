"""stdout and stderr that never fail on a character: the one place gpuscope's own process
makes them so (gpuscope.cli.main calls `tolerant_output()` first).

A terminal that cannot encode UTF-8 (PYTHONIOENCODING=ascii, an ISO-8859-1 locale) made the
console report an internal error at its first `—` or `█`. Each stream keeps its encoding and
gets the error handler "gpuscope.replace": a character the encoding lacks becomes its ASCII
stand-in (`—` -> `-`, `█` -> `#`, `→` -> `->`), else its decomposition's ASCII letters
(`é` -> `e`), else `?`. A file name's undecodable byte (a surrogate escape: Python's C/POSIX
locale streams would write it raw, 0x9b being CSI on an 8-bit terminal) is written as the text
`\\x9b`, never as the byte.
"""

from __future__ import annotations

import codecs
import sys

HANDLER = "gpuscope.replace"

_STAND_INS = {
    "\u2014": "-", "\u2013": "-", "\u2012": "-", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2026": "...", "\u00b7": ".",
    "\u2022": "*", "\u00d7": "x", "\u2192": "->", "\u2190": "<-", "\u2194": "<->", "\u21d2": "=>",
    "\u2265": ">=", "\u2264": "<=", "\u2260": "!=", "\u2248": "~", "\u00b1": "+/-", "\u00b5": "u",
    "\u03bc": "u", "\u2588": "#", "\u2589": "#", "\u258a": "#", "\u258b": "#", "\u258c": "#",
    "\u258d": "#", "\u258e": "#", "\u258f": "|", "\u2591": ".", "\u2592": ":", "\u2593": "#",
    "\u2581": "_", "\u2582": "_", "\u2583": "_", "\u2584": "=", "\u2585": "=", "\u2586": "=",
    "\u2587": "#", "\u2500": "-", "\u2502": "|", "\u2503": "|", "\u2501": "-", "\u2550": "=",
    "\u2713": "v", "\u2717": "x", "\u26a0": "!", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\u2240": "~",
}


def _stand_in(c: str) -> str:
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    s = _STAND_INS.get(c)
    if s is not None:
        return s
    import unicodedata  # (a character the terminal cannot show: rare, and every start-up would pay it)

    ascii_ = unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode("ascii")
    return ascii_ if ascii_ and ascii_.isprintable() else "?"


def _replace(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    return "".join(_stand_in(c) for c in err.object[err.start:err.end]), err.end


codecs.register_error(HANDLER, _replace)


def tolerant_output() -> None:
    """Give stdout and stderr the "gpuscope.replace" error handler (their encodings kept)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or getattr(stream, "errors", None) == HANDLER:
            continue
        try:
            reconfigure(errors=HANDLER)
        except (ValueError, OSError, AttributeError):  # closed, or not a text stream we own
            pass
