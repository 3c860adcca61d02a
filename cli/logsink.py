"""Where a job's log goes: each piece to our stdout or stderr (the stream the job wrote it to),
and/or kept (the last ``keep`` bytes, both streams in order) for --json."""

from __future__ import annotations

import codecs
import shutil
import sys
import unicodedata
from typing import BinaryIO

from kcoral.protocol.framing import SERVER, STDERR, STDOUT
from kcoral.protocol.printable import printable

LOG_KEEP_BYTES = 1024 * 1024
#: what marks each line a submission printed, in an evaluation's output (cli.commands.eval_cmd)
SUBMISSION_MARK = "submission | "
#: how much of what a submission printed an evaluation shows by default (the job's log keeps the rest)
SUBMISSION_SHOWN_BYTES = 4096


class SubmissionMarks:
    """An evaluation's view of its log: every line the submission printed starts with ``mark`` and at most
    ``limit`` bytes of it are shown (0: all), so that nothing it prints can pass for the server's lines
    (the report, which come in the server's own stream and are shown as they are)."""

    def __init__(self, mark: str = SUBMISSION_MARK, limit: int = SUBMISSION_SHOWN_BYTES, width: int = 0) -> None:
        self.mark = mark
        self.limit = limit
        #: the terminal's columns (0: not a terminal): a longer line is broken into rows that each start with
        #: the mark, so that no row the terminal wraps onto is left without it
        self.width = width
        #: bytes the submission printed, and of them not shown
        self.printed = 0
        self.hidden = 0
        self._line_start = True
        self._column = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")

    def job(self, data: bytes) -> bytes:
        """What to show of a piece the submission printed: its control characters escaped whatever the
        output is (a pipe or a file too: a ``\\r`` or an erase-line sequence would hide the mark once the
        saved output reaches a terminal), each line marked."""
        self.printed += len(data)
        if self.limit:
            room = max(self.limit - (self.printed - len(data) - self.hidden), 0)
            self.hidden += max(len(data) - room, 0)
            data = data[:room]
        text = printable(self._decoder.decode(data), newlines=True)
        out: list[str] = []
        for i, piece in enumerate(text.split("\n")):
            if i:  # a newline came before this piece
                out.append("\n")
                self._line_start = True
            if not piece:
                continue
            if self._line_start:
                out.append(self.mark)
                self._line_start, self._column = False, len(self.mark)
            out.append(self._rows(piece))
        return "".join(out).encode()

    def _rows(self, piece: str) -> str:
        """``piece`` of a line, broken where it would pass the terminal's width onto a new marked row."""
        if not self.width:
            return piece
        room = max(self.width, len(self.mark) + 8)
        out: list[str] = []
        for ch in piece:
            columns = 2 if not ch.isascii() and unicodedata.east_asian_width(ch) in "WF" else 1
            if self._column + columns > room:
                out.append("\n" + self.mark)
                self._column = len(self.mark)
            out.append(ch)
            self._column += columns
        return "".join(out)

    def server(self) -> bytes:
        """What to show before a piece of the server's lines: the submission's last line ended, and how
        much of what it printed was not shown (once)."""
        out = b"" if self._line_start else b"\n"
        self._line_start = True
        if self.hidden:
            out += (
                f"{self.mark}[kcoral: {self.hidden} more bytes that the submission printed are not shown here; "
                "`kcoral logs JOB_ID` prints them]\n"
            ).encode()
            self.limit, self.hidden = 0, 0  # said once; the server's lines come after it
        return out


class _Destination:
    """One file we write a job's bytes to, flushed at once; escaped on a terminal."""

    def __init__(self, stream: BinaryIO | None, escape: bool | None) -> None:
        self.stream = stream
        self.escape = _is_terminal(stream) if escape is None else escape
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
        self.broken_pipe = False

    def write(self, chunk: bytes) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(self._shown(chunk))
            self.stream.flush()
        except BrokenPipeError:
            self.stream = None
            self.broken_pipe = True

    def _shown(self, chunk: bytes) -> bytes:
        if not self.escape:
            return chunk
        # incremental: a UTF-8 sequence split between two chunks is decoded whole
        return printable(self._decoder.decode(chunk), newlines=True).encode()


class LogSink:
    """Writes a job's stdout through to ``stream`` and its stderr to ``errors`` (to ``stream`` too
    when no ``errors`` is given), and keeps the last ``keep`` bytes of both.

    A closed pipe (``kcoral python ... | head``) stops the pass-through, not the job.
    On a terminal (``escape``, by default when a destination is one) the job's control characters are
    shown as ``\\xNN`` (all but newline and tab; protocol.printable): a job must not be able to set
    the user's clipboard (OSC 52), hide what follows (``ESC[8m``) or rewrite a line (``\\r``). A
    pipe or a file gets the bytes as the job wrote them.
    """

    def __init__(
        self,
        stream: BinaryIO | None,
        keep: int = 0,
        escape: bool | None = None,
        errors: BinaryIO | None = None,
        marks: SubmissionMarks | None = None,
    ) -> None:
        self.marks = marks
        self._out = _Destination(stream, escape)
        self._err = _Destination(errors, escape) if errors is not None else self._out
        self.escape = self._out.escape
        self.keep = keep
        self.total = 0
        self._kept = bytearray()

    @property
    def broken_pipe(self) -> bool:
        """True once our stdout's reader went away."""
        return self._out.broken_pipe

    def write(self, data: bytes, stream: int = STDOUT) -> None:
        """A piece of the log, from the job's ``stream``."""
        target = self._err if stream == STDERR else self._out
        self.total += len(data)
        if self.marks is None:
            target.write(data)
        elif stream == SERVER:
            target.write(self.marks.server() + data)
        elif shown := self.marks.job(data):
            target.write(shown)
        if self.keep:
            self._kept += data
            if len(self._kept) > self.keep:
                del self._kept[: len(self._kept) - self.keep]

    @property
    def truncated(self) -> bool:
        """True when more was written than kept."""
        return self.total > len(self._kept)

    def text(self) -> str:
        """The kept bytes as text (undecodable bytes replaced)."""
        return self._kept.decode("utf-8", errors="replace")


def terminal_columns() -> int:
    """The columns of the terminal a job's log is shown on (0: neither our stdout nor our stderr is one)."""
    if not (_is_terminal(sys.stdout) or _is_terminal(sys.stderr)):  # type: ignore[arg-type]
        return 0
    return shutil.get_terminal_size((0, 0)).columns


def _is_terminal(stream: BinaryIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False
