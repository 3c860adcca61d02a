"""Where a job's log bytes go: straight to our stdout, and/or kept (the last ``keep`` bytes) for --json."""

from __future__ import annotations

import codecs
from typing import BinaryIO

from kcoral.runner.printable import printable

LOG_KEEP_BYTES = 1024 * 1024


class LogSink:
    """Writes chunks through to ``stream`` (flushed at once) and keeps the last ``keep`` bytes.

    A closed pipe on ``stream`` (``kcoral python ... | head``) stops the pass-through, not the job.
    On a terminal (``escape``, by default when ``stream`` is one) the job's control characters are
    shown as ``\\xNN`` (all but newline and tab; runner.printable): a job must not be able to set
    the user's clipboard (OSC 52), hide what follows (``ESC[8m``) or rewrite a line (``\\r``). A
    pipe or a file gets the bytes as the job wrote them.
    """

    def __init__(self, stream: BinaryIO | None, keep: int = 0, escape: bool | None = None) -> None:
        self.stream = stream
        self.escape = _is_terminal(stream) if escape is None else escape
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
        self.keep = keep
        self.total = 0
        self._kept = bytearray()
        self.broken_pipe = False

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.stream is not None:
            try:
                self.stream.write(self._shown(chunk))
                self.stream.flush()
            except BrokenPipeError:
                self.stream = None
                self.broken_pipe = True
        if self.keep:
            self._kept += chunk
            if len(self._kept) > self.keep:
                del self._kept[: len(self._kept) - self.keep]

    def _shown(self, chunk: bytes) -> bytes:
        if not self.escape:
            return chunk
        # incremental: a UTF-8 sequence split between two chunks is decoded whole
        return printable(self._decoder.decode(chunk), newlines=True).encode()

    @property
    def truncated(self) -> bool:
        """True when more was written than kept."""
        return self.total > len(self._kept)

    def text(self) -> str:
        """The kept bytes as text (undecodable bytes replaced)."""
        return self._kept.decode("utf-8", errors="replace")


def _is_terminal(stream: BinaryIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False
