"""How a job's log travels: stream ids and frames, the way Docker frames an attach stream.

The server sends a log either raw (the combined bytes) or framed: an 8-byte header (the stream id,
three zero bytes, the length as a 32-bit big-endian number) before each piece, so that a client can
write each piece to its own file descriptor. A framed stream may also carry the job's status
(:data:`STATUS` frames), so that a client learns how the job ended from the same connection. How the
server keeps a log on disk is runner.joblog's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: the stream ids, Docker's
STDOUT = 1
STDERR = 2
#: from here on the two streams are no longer told apart (a job that switched more than
#: runner.joblog.MAX_SWITCHES times); a client shows such bytes on stdout
MIXED = 3
STREAMS = (STDOUT, STDERR, MIXED)
#: not the job's bytes either: lines the server wrote into the job's log itself (an evaluation's report),
#: sent as such only to a client that asks (``server_lines=true``; others get them as stdout), so that
#: nothing the job printed can pass for them
SERVER = 4
#: not the job's bytes: a frame of this id carries the job's view (a JobView as JSON), sent in a
#: followed log asked ``status=true`` each time the job's state or queue position changes, and once
#: more after the last byte of a finished job's log; no log offset counts it
STATUS = 16
FRAME_HEADER = struct.Struct(">BxxxL")


@dataclass(frozen=True)
class Piece:
    stream: int
    data: bytes


def frame(piece: Piece) -> bytes:
    return FRAME_HEADER.pack(piece.stream, len(piece.data)) + piece.data


class FrameReader:
    """Pieces back out of a framed byte stream that arrives in chunks of any size."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[Piece]:
        self._buf += chunk
        pieces: list[Piece] = []
        while len(self._buf) >= FRAME_HEADER.size:
            stream, length = FRAME_HEADER.unpack_from(self._buf)
            if stream not in STREAMS and stream not in (STATUS, SERVER):
                raise ValueError(f"not a log frame (stream id {stream})")
            end = FRAME_HEADER.size + length
            if len(self._buf) < end:
                break
            pieces.append(Piece(stream, bytes(self._buf[FRAME_HEADER.size : end])))
            del self._buf[:end]
        return pieces
