"""Store-derived text made safe for a terminal: one finding, one line.

File names come from whoever can write into the store's folders, and a name may hold a newline
(which would forge a line of ``explorer check``), an escape sequence (which would recolour or
rewrite the terminal) or an invisible direction mark. ``printable`` writes every such character
as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``) and leaves every other character as it is.
"""
from __future__ import annotations

import unicodedata

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def printable(text: object) -> str:
    """``text`` with control, format and separator characters (Unicode categories Cc, Cf, Zl,
    Zp) and backslashes escaped, so that it prints as one line and reads back unambiguously."""
    s = str(text)
    if s.isprintable() and "\\" not in s:
        return s
    return "".join(_escape(ch) if ch == "\\" or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in s)
