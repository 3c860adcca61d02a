"""A job's log on the server's disk: the bytes its containers printed, in the order they printed
them, and which stream (stdout or stderr) each byte came from.

``log`` holds the bytes as one combined stream (what a log offset counts). Beside it, ``log.streams``
holds one record per change of stream: the stream's id and the offset where it starts. A log without
that file (made before kcoral kept streams apart) is stdout throughout. How a log travels to a client
(stream ids, frames) is kcoral.protocol.framing's.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path

from kcoral.protocol.framing import MIXED, SERVER, STDOUT, Piece

#: at most this many records (9 bytes each: 576 KiB, a few percent of the 16 MiB log budget, which
#: the index is not charged to); a job that alternates 1-byte writes reaches it after 64 Ki bytes
MAX_SWITCHES = 1 << 16
_RECORD = struct.Struct("<BQ")  # stream id, the offset where it starts


def streams_path(log: Path) -> Path:
    return log.with_name(log.name + ".streams")


class LogWriter:
    """Appends to one log from any thread (the containers of a group write to the same log).
    OSError (a full disk) reaches the caller; what was written stays consistent. ``on_append`` is
    called after each append that wrote bytes (whoever follows the log is woken: runner.changes)."""

    def __init__(self, path: Path, on_append: Callable[[], None] | None = None) -> None:
        self.path = path
        self._on_append = on_append
        self._lock = threading.Lock()
        self._log = _open_append(path)
        try:
            self._index = _open_append(streams_path(path))
        except OSError:
            os.close(self._log)
            raise
        self.size = os.fstat(self._log).st_size
        self._records = _drop_dangling(self._index, streams_path(path), self.size)
        self._last = _last_stream(streams_path(path), self._records, self.size)

    def append(self, stream: int, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            if stream != self._last and (self._last != MIXED or stream == SERVER):
                # the server's own lines keep their stream past the cap: a job cannot make them its own
                stream = MIXED if self._records >= MAX_SWITCHES and stream != SERVER else stream
                try:
                    write_all(self._index, _RECORD.pack(stream, self.size))
                except OSError:
                    with contextlib.suppress(OSError):  # no half record: the next append tries again
                        os.ftruncate(self._index, self._records * _RECORD.size)
                    raise
                self._records += 1
                self._last = stream
            try:
                write_all(self._log, data)
            finally:
                self.size = os.fstat(self._log).st_size  # what reached the file, a full disk or not
        if self._on_append is not None:
            self._on_append()

    def extend(self, pieces: list[tuple[int, bytes]]) -> None:
        """Append several pieces with one write for their bytes and one for their records (a batch
        of a job's output as it came from the engine). On a failed write (a full disk) the records
        past what reached the log are taken back, so the log and its index stay consistent."""
        with self._lock:
            records, last, count, size = bytearray(), self._last, self._records, self.size
            for stream, data in pieces:
                if data and stream != last and last != MIXED:
                    last = MIXED if count >= MAX_SWITCHES else stream
                    records += _RECORD.pack(last, size)
                    count += 1
                size += len(data)
            try:
                if records:
                    write_all(self._index, memoryview(records))
                write_all(self._log, b"".join(data for _, data in pieces))
            except OSError:
                self.size = os.fstat(self._log).st_size
                with contextlib.suppress(OSError):
                    self._records = _drop_dangling(self._index, streams_path(self.path), self.size)
                    self._last = _last_stream(streams_path(self.path), self._records, self.size)
                raise
            self._records, self._last, self.size = count, last, size
        if self._on_append is not None and any(data for _, data in pieces):
            self._on_append()

    def close(self) -> None:
        """Never raises: nothing is buffered here (every append reached the kernel or failed)."""
        with self._lock:
            for fd in (self._log, self._index):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """``os.write`` until every byte of ``data`` is written."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _drop_dangling(fd: int, index: Path, size: int) -> int:
    """The index's whole records, less those at or past the log's end (a writer stopped between a
    record and its bytes, or a half record): the next append starts clean. Returns how many remain."""
    records = os.fstat(fd).st_size // _RECORD.size
    with open(index, "rb") as f:
        while records:
            f.seek((records - 1) * _RECORD.size)
            if _RECORD.unpack(f.read(_RECORD.size))[1] < size:
                break
            records -= 1
    if os.fstat(fd).st_size != records * _RECORD.size:
        os.ftruncate(fd, records * _RECORD.size)
    return records


def _last_stream(index: Path, records: int, size: int) -> int | None:
    """The stream the log's last byte came from (None for an empty log; stdout for one without records)."""
    if records:
        with open(index, "rb") as f:
            f.seek((records - 1) * _RECORD.size)
            return _RECORD.unpack(f.read(_RECORD.size))[0]
    return STDOUT if size else None


def read_pieces(path: Path, offset: int, limit: int) -> list[Piece]:
    """Up to ``limit`` bytes of the log from ``offset``, split where the stream changes."""
    try:
        with open(path, "rb") as f:
            if offset >= os.fstat(f.fileno()).st_size:
                return []
            f.seek(offset)
            data = f.read(limit)
    except FileNotFoundError:
        return []
    pieces: list[Piece] = []
    for stream, start, end in _spans(streams_path(path), offset, offset + len(data)):
        pieces.append(Piece(stream, data[start - offset : end - offset]))
    return pieces


def _spans(index: Path, begin: int, end: int) -> list[tuple[int, int, int]]:
    """(stream, start, end) covering [begin, end) from the index: a binary search for the record
    that holds ``begin``, then the records up to ``end``."""
    try:
        f = open(index, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return [(STDOUT, begin, end)]
    with f:
        count = os.fstat(f.fileno()).st_size // _RECORD.size

        def record(i: int) -> tuple[int, int]:
            f.seek(i * _RECORD.size)
            return _RECORD.unpack(f.read(_RECORD.size))

        lo, hi = 0, count  # the last record whose start <= begin
        while lo < hi:
            mid = (lo + hi) // 2
            if record(mid)[1] <= begin:
                lo = mid + 1
            else:
                hi = mid
        first = lo - 1
        stream = record(first)[0] if first >= 0 else STDOUT
        spans: list[tuple[int, int, int]] = []
        pos = begin
        for i in range(first + 1, count + 1):
            if pos >= end:
                break
            nxt_stream, nxt_start = record(i) if i < count else (stream, end)
            stop = min(nxt_start, end)
            if stop > pos:
                spans.append((stream, pos, stop))
                pos = stop
            stream = nxt_stream
        return spans
