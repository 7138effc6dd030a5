"""The explorer's one formatter of values for text: numbers in fits, diagnostics, phase and report
text (``fmt``), spec values in error messages (``spec_value``), sizes and durations in estimates
(``format_bytes``, ``format_seconds``), shares (``format_percent``)."""
from __future__ import annotations

import json
import math
import unicodedata
from typing import Any


def fmt(value, spec: str = ".4g", missing: str = "n/a") -> str:
    """A value for text output.

    Floats (numpy's included) go through ``format(value, spec)``; None and NaN print as
    ``missing``; anything else (ints, strings, booleans) as ``str``. ``fmt(x, "g")`` is an axis
    value (floats without trailing zeros), ``fmt(x)`` an estimate (4 significant digits).
    """
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a numpy scalar (duck-typed: a spec error must not import numpy)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return format(value, spec)
    return str(value)



def format_percent(share: float) -> str:
    """A share as a percentage with 3 significant digits, whatever its size (0.0001 -> '0.01%',
    2.5e12 -> '2.5e+14%')."""
    return f"{100 * share:.3g}%" if math.isfinite(share) else fmt(share)


# An echoed value is cut to this many characters (a spec is a few KiB: a value this long is a
# mistake, and the line that names it should stay readable), a list to this many items.
SHOWN_CHARS = 80
# A whole error line (error_line): room for a message, its cut echoes and the command that
# resumes (a path and a store URI), which must print whole.
ERROR_LINE_CHARS = 1000
SHOWN_ITEMS = 20
# Characters that would break an error line or rewrite the terminal: controls (Cc), invisible
# format characters such as the bidi overrides U+202A-202E and U+2066-2069 (Cf), line and
# paragraph separators (Zl, Zp), and unassigned or private code points (Cn, Co, Cs).
# ``store.printable`` applies the same rule to store-derived text; it is not imported here
# because a spec error must not import the store (pyarrow).
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Cn", "Co", "Cs"))


def _visible(ch: str) -> str:
    if unicodedata.category(ch) not in _HIDDEN:
        return ch
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable_text(text: str) -> str:
    """``text`` with every non-printable character (``_HIDDEN``) written as a ``\\uXXXX`` escape,
    the rest as it is: a message built from user input prints as one visible line."""
    return text if text.isprintable() else "".join(_visible(ch) for ch in text)


def shell_word(text: object) -> str:
    """``text`` (a file name, a path) as one shell word to echo in a hint the user may paste: bare
    when it holds only safe characters, single-quoted (``shlex.quote``) when it holds spaces or
    quotes, and as bash's ``$'...'`` with every control, bidi and other invisible character
    written as an escape (``\\u202e``, ``\\n``) when it holds one: it prints as one visible line
    and pastes back as the same name."""
    import shlex

    s = str(text)
    if s.isprintable():
        return shlex.quote(s)
    out = []
    for ch in s:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def shell_command(words) -> str:
    """A command line of ``words``, each as ``shell_word`` writes it."""
    return " ".join(shell_word(w) for w in words)


def shown_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with the full length said), escaped as
    ``printable_text`` does."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text):,} characters)"
    return printable_text(text)


def shown_ends(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to about ``limit`` characters by leaving out its middle (the length left out
    said), escaped as ``printable_text`` does: a library's message keeps both what failed (its
    start) and why (its end, often the system's own words)."""
    if len(text) > limit:
        head = limit * 2 // 3
        tail = limit - head
        text = f"{text[:head]} ... ({len(text) - head - tail:,} characters) ... {text[-tail:]}"
    return printable_text(text)


def error_line(text: str) -> str:
    """One line of an error message as the CLI prints it: escaped as ``printable_text`` does, and
    cut to ``ERROR_LINE_CHARS`` with the full length said, so that a library's message quoting a
    user's value (a name, a path, a ``--where`` filter of 30,000 characters) stays one short line.
    """
    return shown_text(text, ERROR_LINE_CHARS)


def spec_value(value: Any) -> str:
    """A spec value as TOML writes it, for error messages: strings quoted (control, bidi and other
    invisible characters escaped, cut to ``SHOWN_CHARS``), booleans as true/false, lists item by
    item (the first ``SHOWN_ITEMS``), a table as "a table"."""
    if isinstance(value, str):
        if len(value) > SHOWN_CHARS:
            return printable_text(json.dumps(value[:SHOWN_CHARS], ensure_ascii=False)) + f"... ({len(value):,} characters)"
        return printable_text(json.dumps(value, ensure_ascii=False))  # a TOML basic string: controls escaped
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        items = ", ".join(spec_value(v) for v in value[:SHOWN_ITEMS])
        more = f", ... ({len(value):,} items)" if len(value) > SHOWN_ITEMS else ""
        return f"[{items}{more}]"
    if isinstance(value, dict):
        return "a table"
    return shown_text(repr(value))


def spec_key(key: Any) -> str:
    """A key the user wrote, for error messages: bare when it is a plain TOML key (letters,
    digits, ``_``, ``-``), else quoted and escaped as ``spec_value`` does."""
    text = str(key)
    if text and len(text) <= SHOWN_CHARS and all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in text):
        return text
    return spec_value(text)


def format_bytes(n: float) -> str:
    """A size in bytes with a binary unit (``31 GiB``), three significant digits."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def format_seconds(s: float) -> str:
    """A duration in s, min, h or days, two or three significant digits."""
    if s < 60:
        return f"{s:.2g} s"
    if s < 3600:
        return f"{s / 60:.3g} min"
    if s < 86400 * 2:
        return f"{s / 3600:.3g} h"
    return f"{s / 86400:.3g} days"


__all__ = ["fmt", "format_bytes", "format_seconds", "printable_text", "shell_command", "shell_word", "shown_text", "spec_key",
           "spec_value"]
