"""THE rule for text a job (or a server) chose, shown to a person: C0 and C1 control characters
(escape sequences among them) shown as \\xNN, so such text cannot hide, fake or restyle what follows
it on a terminal; lone surrogates (which no terminal, file or JSON encoder can take) as \\uNNNN; and
Unicode's invisible characters that move or break the text around them as \\uNNNN too: the
directional formatting characters (the embeddings, overrides and isolates, with which a line can
show its characters in another order than they have, "Trojan Source"; and the three marks) and the
line and paragraph separators (a line break where a browser or an editor draws the text).
Stdlib only: the report (server), the output collection, the web views and the CLI use it."""

from __future__ import annotations

import re

#: ALM, LRM, RLM; LRE, RLE, PDF, LRO, RLO; LRI, RLI, FSI, PDI; LINE and PARAGRAPH SEPARATOR
UNICODE_FORMATTING = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
#: lone surrogates, found apart (only in text that is not ASCII): a table of their 2,048 would cost
#: every command's start ~1 ms
_SURROGATES = "[\ud800-\udfff]"


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


#: str.translate's tables (one pass in C over a long log): tab kept; newline kept or escaped
_TABLE = {code: _escaped(code) for code in [*range(0x20), *range(0x7F, 0xA0), *map(ord, UNICODE_FORMATTING)]}
del _TABLE[ord("\t")]
_TABLE_NEWLINES = {code: text for code, text in _TABLE.items() if code != ord("\n")}


def printable(text: str, newlines: bool = False) -> str:
    shown = text.translate(_TABLE_NEWLINES if newlines else _TABLE)
    if shown.isascii():
        return shown
    return re.sub(_SURROGATES, lambda m: _escaped(ord(m.group())), shown)


def is_control(c: str) -> bool:
    """A character :func:`printable` shows escaped (a tab too: a control character)."""
    return ord(c) in _TABLE or c == "\t" or 0xD800 <= ord(c) < 0xE000
