"""Whole lines out of a container's two streams, so that they do not interleave inside a line.

The engine copies each of a container's pipes as it reads it, so a line written in pieces (Python's
unbuffered ``print`` writes its text and its newline apart) can come in two reads with a piece of the
other stream between them: ``out``, ``err``, ``\\n``, ``\\n`` would reach the log as ``outerr\\n\\n``.
:class:`WholeLines` holds each stream's unfinished line until its end (a newline or a carriage
return, which ends a progress bar's update) and lets the finished lines through, in the order they
finished. Bytes of one stream keep their order; nothing is dropped. A held line goes through unfinished
once it is HOLD_BYTES long, when output that comes HOLD_S or more after it finds it still waiting, and at
the end (:meth:`rest`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: an unfinished line this long goes through as it is (a job printing without newlines)
HOLD_BYTES = 64 << 10
#: an unfinished line held this long goes through with the next output of either stream
HOLD_S = 1.0


class WholeLines:
    """Feed it the (stream, bytes) pieces of a container's output as they come; it gives back what
    can be written now. Not thread-safe: one reader feeds it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[int, bytes] = {}
        self._since: dict[int, float] = {}  # when each held line's first byte came

    def feed(self, batch: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """The finished lines of ``batch`` (with what each stream held before them), then the held
        lines that waited HOLD_S or more."""
        now = self._clock()
        out: list[tuple[int, bytes]] = []
        for stream, data in batch:
            if not data:
                continue
            held = self._held.pop(stream, b"") + data
            cut = max(held.rfind(b"\n"), held.rfind(b"\r")) + 1
            if len(held) - cut >= HOLD_BYTES:
                cut = len(held)
            if cut:
                _add(out, stream, held[:cut])
            if cut < len(held):
                self._held[stream] = held[cut:]
                if cut or stream not in self._since:
                    self._since[stream] = now
            else:
                self._since.pop(stream, None)
        for stream in sorted(self._since, key=self._since.__getitem__):
            if now - self._since[stream] >= HOLD_S:
                del self._since[stream]
                _add(out, stream, self._held.pop(stream))
        return out

    def rest(self) -> list[tuple[int, bytes]]:
        """Every held line, unfinished, in the order they began (at the end of the output)."""
        out: list[tuple[int, bytes]] = []
        for stream in sorted(self._since, key=self._since.__getitem__):
            _add(out, stream, self._held.pop(stream))
        self._since.clear()
        return out


def _add(out: list[tuple[int, bytes]], stream: int, data: bytes) -> None:
    """Append a piece, joined to the last one where it is of the same stream."""
    if out and out[-1][0] == stream:
        out[-1] = (stream, out[-1][1] + data)
    else:
        out.append((stream, data))
