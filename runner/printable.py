"""THE rule for text a job (or a server) chose, shown to a person: C0 and C1 control characters
(escape sequences among them) shown as \\xNN, so such text cannot hide, fake or restyle what follows
it on a terminal. Stdlib only: the report (server), the output collection and the CLI use it."""

from __future__ import annotations


def printable(text: str, newlines: bool = False) -> str:
    keep = "\t\n" if newlines else "\t"
    return "".join(c if c in keep or not is_control(c) else f"\\x{ord(c):02x}" for c in text)


def is_control(c: str) -> bool:
    return ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0
