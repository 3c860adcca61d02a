"""The Docker engine's log stream undone from a buffer: the HTTP body's chunked coding, then the
frames that multiplex stdout and stderr (an 8-byte header: the stream id, three zero bytes, the
payload's length as a 32-bit big-endian number; then the payload).

Both parsers are pure: bytes in as they arrive, in chunks of any size (a header or a chunk-size line
may be cut anywhere), data out. They work over whole buffers so that a job printing short lines
costs a few operations per line, not a read call per header and per payload; and the frames of one
stream that follow each other come out as one piece, so the log is written in large writes.
"""

from __future__ import annotations

import struct

#: Docker's frame header: stream id, three zero bytes, payload length (big-endian)
FRAME_HEADER = struct.Struct(">BxxxL")
#: a chunk-size line longer than this is not HTTP (a size in hex and, rarely, an extension)
MAX_SIZE_LINE = 1024
#: the stream ids a container's log uses (Docker's stdin, stdout, stderr)
ENGINE_STREAMS = (0, 1, 2)


class StreamError(ValueError):
    """The bytes are not a chunked body, or not a Docker log stream."""


class ChunkedBody:
    """HTTP/1.1's chunked transfer coding undone: :meth:`feed` the body's bytes as they arrive and get
    the data they carry; :attr:`done` once the last chunk (size 0) and its trailer have been read."""

    def __init__(self) -> None:
        self._pending = b""  # an unfinished size or trailer line
        self._left = 0  # data bytes still to come in the current chunk
        self._skip = 0  # bytes of the CRLF after a chunk's data still to skip
        self._trailer = False  # past the last chunk: reading trailer lines up to an empty one
        self.done = False

    def feed(self, data: bytes) -> list[memoryview]:
        """The data of the chunks in ``data`` (and of those it ends), in order, as views."""
        if self._pending:
            data, self._pending = self._pending + data, b""
        out: list[memoryview] = []
        view = memoryview(data)
        pos, end = 0, len(data)
        while pos < end and not self.done:
            if self._left or self._skip:
                pos = self._in_chunk(data, view, pos, out)
                continue
            newline = data.find(b"\n", pos, pos + MAX_SIZE_LINE)
            if newline < 0:
                if end - pos >= MAX_SIZE_LINE:
                    raise StreamError("a chunk-size line that does not end")
                self._pending = data[pos:]
                break
            if self._trailer:
                self.done = newline == pos or (newline == pos + 1 and data[pos] == 13)
                pos = newline + 1
                continue
            try:  # hex digits and a CR, as the engine sends them (int() takes the rest as well)
                size = int(data[pos:newline], 16)
            except ValueError:  # an extension after ';', or not a size at all
                size = _chunk_size(data[pos:newline])
            if size < 0:
                raise StreamError(f"not a chunk size: {data[pos:newline][:40]!r}")
            start, pos = newline + 1, newline + 1
            stop = start + size
            if size and data[stop : stop + 2] == b"\r\n":  # the whole chunk is here: the usual case
                out.append(view[start:stop])
                pos = stop + 2
            else:
                self._left = size
                self._trailer = size == 0
        return out

    def _in_chunk(self, data: bytes, view: memoryview, pos: int, out: list[memoryview]) -> int:
        """Past the current chunk's data (into ``out``) and its CRLF, as far as ``data`` goes."""
        end = len(data)
        if self._left:
            take = min(self._left, end - pos)
            out.append(view[pos : pos + take])
            pos += take
            self._left -= take
            self._skip = 0 if self._left else 2
            return pos
        take = min(self._skip, end - pos)
        if data[pos : pos + take] != b"\r\n"[2 - self._skip : 2 - self._skip + take]:
            raise StreamError("a chunk's data is not followed by CRLF")
        self._skip -= take
        return pos + take


def _chunk_size(line: bytes) -> int:
    """A chunk-size line's size (hex digits, then perhaps extensions after ';'; the CR is allowed)."""
    digits = line.split(b";", 1)[0].strip(b" \t\r")
    if not digits or digits.strip(b"0123456789abcdefABCDEF"):
        raise StreamError(f"not a chunk size: {line[:40]!r}")
    return int(digits, 16)


class EngineFrames:
    """Docker's multiplexed frames undone: :meth:`feed` the stream's bytes as they arrive (one buffer,
    or a list of parts as :class:`ChunkedBody` gives them) and get (stream id, payload) pieces, the
    payloads of frames of one stream that follow each other joined (empty ones dropped).
    :attr:`frames` counts the frames read; :attr:`partial` says whether a frame has begun but not
    ended (a cut stream, once it has ended)."""

    def __init__(self) -> None:
        self._pending = b""  # a header and the part of its payload that has come
        self.frames = 0

    @property
    def partial(self) -> bool:
        return bool(self._pending)

    def feed(self, parts: bytes | list[memoryview]) -> list[tuple[int, bytes]]:
        pieces: list[tuple[int, bytes]] = []
        run: list[memoryview] = []  # payloads of `stream` not yet in `pieces`
        stream = -1
        size = FRAME_HEADER.size
        unpack = FRAME_HEADER.unpack_from
        found: tuple[tuple[int, memoryview], ...]
        for part in [parts] if isinstance(parts, bytes) else parts:
            found = ()
            if not self._pending and len(part) >= size:  # a part that is one whole frame: a chunk's usual case
                sid, length = unpack(part)
                if length + size == len(part) and sid in ENGINE_STREAMS:
                    self.frames += 1
                    found = ((sid, memoryview(part)[size:]),)
            for sid, payload in found or self._split(part):
                if not payload:
                    continue
                if sid != stream:
                    if run:
                        pieces.append((stream, b"".join(run)))
                        run = []
                    stream = sid
                run.append(payload)
        if run:
            pieces.append((stream, b"".join(run)))
        return pieces

    def _split(self, part: bytes | memoryview) -> list[tuple[int, memoryview]]:
        """The frames that end in ``part`` (with what was kept before it); the rest is kept."""
        data = self._pending + part if self._pending else part
        self._pending = b""
        view = memoryview(data)
        unpack = FRAME_HEADER.unpack_from
        found: list[tuple[int, memoryview]] = []
        pos, end, size = 0, len(data), FRAME_HEADER.size
        while end - pos >= size:
            sid, length = unpack(data, pos)
            if sid not in ENGINE_STREAMS:
                raise StreamError(f"not a Docker log frame (stream id {sid})")
            stop = pos + size + length
            if stop > end:
                break
            self.frames += 1
            found.append((sid, view[pos + size : stop]))
            pos = stop
        if pos < end:
            self._pending = bytes(data[pos:])
        return found
