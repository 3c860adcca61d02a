"""Where a job's log bytes go: straight to our stdout, and/or kept (the last ``keep`` bytes) for --json."""

from __future__ import annotations

from typing import BinaryIO

LOG_KEEP_BYTES = 1024 * 1024


class LogSink:
    """Writes chunks through to ``stream`` (flushed at once) and keeps the last ``keep`` bytes.

    A closed pipe on ``stream`` (``kcoral python ... | head``) stops the pass-through, not the job.
    """

    def __init__(self, stream: BinaryIO | None, keep: int = 0) -> None:
        self.stream = stream
        self.keep = keep
        self.total = 0
        self._kept = bytearray()
        self.broken_pipe = False

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.stream is not None:
            try:
                self.stream.write(chunk)
                self.stream.flush()
            except BrokenPipeError:
                self.stream = None
                self.broken_pipe = True
        if self.keep:
            self._kept += chunk
            if len(self._kept) > self.keep:
                del self._kept[: len(self._kept) - self.keep]

    @property
    def truncated(self) -> bool:
        """True when more was written than kept."""
        return self.total > len(self._kept)

    def text(self) -> str:
        """The kept bytes as text (undecodable bytes replaced)."""
        return self._kept.decode("utf-8", errors="replace")
