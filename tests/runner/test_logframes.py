"""The engine's log stream undone from a buffer: chunked coding and multiplexed frames cut anywhere."""

from __future__ import annotations

import random

import pytest

from kcoral.runner.logframes import FRAME_HEADER, ChunkedBody, EngineFrames, StreamError

PIECES = [(1, b"hello\n"), (1, b"world\n"), (2, b"oops\n"), (1, b""), (1, b"x" * 70_000), (2, b"last, no newline")]


def framed(pieces: list[tuple[int, bytes]]) -> bytes:
    return b"".join(FRAME_HEADER.pack(stream, len(data)) + data for stream, data in pieces)


def chunked(body: bytes, sizes: list[int]) -> bytes:
    """``body`` in chunks of the given sizes (the rest in one), a chunk extension on one, then the end."""
    out, pos = [], 0
    for i, size in enumerate([*sizes, len(body)]):
        part = body[pos : pos + size]
        pos += len(part)
        if part:
            out.append(b"%x%s\r\n%s\r\n" % (len(part), b";x=y" if i == 1 else b"", part))
    return b"".join(out) + b"0\r\n\r\n"


def cuts(data: bytes, seed: int) -> list[bytes]:
    """``data`` cut at random places, among them inside every frame header and chunk line of its start."""
    rng = random.Random(seed)
    points = sorted({*range(0, 40), *(rng.randrange(len(data)) for _ in range(60)), len(data)})
    return [data[a:b] for a, b in zip([0, *points], points, strict=False) if b > a]


def merged(pieces: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Pieces with the empty ones dropped and those of one stream in a row joined."""
    out: list[tuple[int, bytes]] = []
    for stream, data in pieces:
        if not data:
            continue
        if out and out[-1][0] == stream:
            out[-1] = (stream, out[-1][1] + data)
        else:
            out.append((stream, data))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_frames_cut_anywhere_come_back_whole_with_their_streams(seed: int) -> None:
    frames = EngineFrames()
    got = [p for part in cuts(framed(PIECES), seed) for p in frames.feed(part)]
    assert merged(got) == merged(PIECES)
    assert frames.frames == len(PIECES) and not frames.partial


@pytest.mark.parametrize("seed", range(20))
def test_a_chunked_body_cut_anywhere_gives_its_frames_back(seed: int) -> None:
    raw = chunked(framed(PIECES), [3, 5, 8, 17, 100, 8 + 6])  # chunks that split headers and payloads
    body, frames = ChunkedBody(), EngineFrames()
    got = [p for part in cuts(raw, seed) for p in frames.feed(body.feed(part))]
    assert body.done and merged(got) == merged(PIECES) and not frames.partial


def test_a_chunk_per_frame_is_read_whole_and_one_stream_in_a_row_comes_as_one_piece() -> None:
    pieces = [(1 + i % 3 // 2, b"line %d\n" % i) for i in range(1000)]
    raw = b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in (framed([p]) for p in pieces)) + b"0\r\n\r\n"
    body, frames = ChunkedBody(), EngineFrames()
    got = frames.feed(body.feed(raw))
    assert got == merged(pieces) and len(got) == 667 and frames.frames == 1000


def test_the_end_of_a_chunked_body_stops_it_and_a_trailer_is_read() -> None:
    body = ChunkedBody()
    parts = body.feed(b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n")
    assert b"".join(parts) == b"abc" and not body.done
    assert body.feed(b"\r\nnot read") == [] and body.done


def test_a_stream_that_stops_inside_a_frame_says_so() -> None:
    frames = EngineFrames()
    assert frames.feed(framed([(1, b"whole")]) + FRAME_HEADER.pack(2, 13) + b"part") == [(1, b"whole")]
    assert frames.partial
    assert frames.feed(b"ial text") == []
    assert frames.feed(b"!") == [(2, b"partial text!")] and not frames.partial


@pytest.mark.parametrize(
    ("make", "data"),
    [
        (EngineFrames, FRAME_HEADER.pack(7, 1) + b"x"),  # not stdin, stdout or stderr
        (ChunkedBody, b"zz\r\n"),  # not a size
        (ChunkedBody, b"-1\r\n"),
        (ChunkedBody, b"3\r\nabcXY"),  # no CRLF after the data
        (ChunkedBody, b"1" * 2000),  # a size line that never ends
    ],
)
def test_what_is_not_the_engines_stream_is_refused(make: type, data: bytes) -> None:
    with pytest.raises(StreamError):
        make().feed(data)
