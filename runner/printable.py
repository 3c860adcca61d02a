"""THE rule for text a job (or a server) chose, shown to a person: C0 and C1 control characters
(escape sequences among them) shown as \\xNN, so such text cannot hide, fake or restyle what follows
it on a terminal; lone surrogates (which no terminal, file or JSON encoder can take) as \\uNNNN.
Stdlib only: the report (server), the output collection and the CLI use it."""

from __future__ import annotations


def printable(text: str, newlines: bool = False) -> str:
    keep = "\t\n" if newlines else "\t"
    return "".join(c if c in keep or not is_control(c) else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def is_control(c: str) -> bool:
    """A C0 or C1 control character, or a lone surrogate."""
    return ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000
